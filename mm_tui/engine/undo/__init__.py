"""Undo that covers whatever changed the project's files: before each turn mm records them, and
`/undo [N]` puts back every file the last N turns changed, created or deleted, whether a tool
wrote it or a command did (`sed -i`, `rm -rf`, `mv`, a build), in a folder with or without git.

Why the project folder: the sandbox lets a command write there (and in the temporary folders),
so that is what a turn can change. The snapshots live in mm's state folder
(`undo/<project key>/`, store.py), never in the project or in its git.

- store.py: the content-addressed store of contents and the manifests naming them;
- snapshot.py: the walk that records the tree, hashing only what changed since the last one;
- restore.py: the plan (what will be restored, brought back, deleted) and applying it safely.

"Recorded by name only unless they changed, and said so", precisely: files over 5 MB, the
folders of `SKIPPED_NAMES` (`.git`, `node_modules`, `.venv`, `__pycache__`…, not entered) and
what is neither file, folder nor link are recorded by their name, kind, size and times, not
their contents. /undo never touches one: when one changed (was created, deleted, or its size or
mtime moved) in the turns undone, the plan lists it as left as it is, saying why, so the
person knows what the undo did not cover. Those that did not change are not mentioned.

A second /undo right after one (no turn between) redoes: it goes back to the snapshot the
first took of the files just before it changed them. `/undo N` right after one goes N turns
further back instead.
"""
