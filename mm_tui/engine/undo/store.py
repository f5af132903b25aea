"""Where the snapshots of a project live: a content-addressed store of file contents and the
manifests that name them, in mm's state folder (`undo/<project key>/`), never in the project.

    objects/ab/cdef…   a file's bytes, named by their SHA-256 (so a file kept by a hundred
                       snapshots is stored once)
    snapshots/<id>.json  a manifest: each path of the project and what it was
    latest             the id of the newest manifest, so a new mm compares with it

A manifest holds what changed since its parent (`set`, `gone`), and every 32nd one holds the
whole tree, so that writing one after a turn that changed three files writes three entries, and
reading one reads at most 32 small files. Everything is written atomically (a temporary file
renamed), owner-only: 0o600 files in 0o700 folders, since the contents are the project's.

What is read back is checked, as anything read from disk is: a blob whose bytes no longer hash
to its name is refused, a manifest that does not parse is missing, and a path in a manifest
that would leave the project is refused where it is used (restore.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from pathlib import Path
from typing import Any, NamedTuple

from mm_tui.core.files import write_atomically

FILE, DIR, LINK, OTHER = "f", "d", "l", "o"
"""An entry's kind: a regular file, a folder, a symbolic link, anything else (a pipe, a socket,
a device: recorded by name only)."""

LARGE, SKIPPED, SPECIAL, SECRET = "large", "skipped", "special", "holds a key"
"""Why an entry is recorded by name only: a file over the size limit, a folder passed over by
name (`.git`, `node_modules`…), not a file mm copies (a pipe, a socket, a device)."""

FULL_EVERY = 32  # a manifest with the whole tree after this many partial ones
SNAPSHOT_ID = re.compile(r"[0-9]{8}-[0-9]{6}-[0-9a-f]{8}")
DIGEST = re.compile(r"[0-9a-f]{64}")


class Entry(NamedTuple):
    """What one path was. `data`: a file's SHA-256, a link's target, else None; `name_only`:
    why its contents are not kept (None: they are)."""

    kind: str
    mode: int  # the permission bits
    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    data: str | None = None
    name_only: str | None = None


Manifest = dict[str, Entry]
"""Each path of the project (relative, `/`-separated) and what it was."""


class Store:
    """A project's snapshots in `folder` (made when first written)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.objects = folder / "objects"
        self.snapshots = folder / "snapshots"
        self._made: set[str] = set()  # object folders known to exist
        self._depths: dict[str, int] = {}  # snapshot id -> partial manifests since a full one

    # -- blobs -------------------------------------------------------------------------------

    def has(self, digest: str) -> bool:
        return (self.objects / digest[:2] / digest[2:]).is_file()

    def put(self, data: bytes) -> str:
        """Keep `data`; its SHA-256, which names it. Bytes already kept are not written again."""
        digest = hashlib.sha256(data).hexdigest()
        folder = self.objects / digest[:2]
        path = folder / digest[2:]
        if digest[:2] not in self._made:
            _make_folder(folder)
            self._made.add(digest[:2])
        if not path.exists():
            write_atomically(path, data, mode=0o600, sync=False)
        return digest

    def get(self, digest: str) -> bytes | None:
        """The bytes named `digest`, or None when they are missing or damaged."""
        if not DIGEST.fullmatch(digest):
            return None
        try:
            data = (self.objects / digest[:2] / digest[2:]).read_bytes()
        except OSError:
            return None
        return data if hashlib.sha256(data).hexdigest() == digest else None

    # -- manifests ---------------------------------------------------------------------------

    def write(
        self, snapshot_id: str, manifest: Manifest, parent: tuple[str, Manifest] | None
    ) -> None:
        """Write `manifest` as `snapshot_id`: what changed since `parent` (its id and manifest),
        or the whole of it, and make it the latest."""
        depth = self._depths.get(parent[0], FULL_EVERY) + 1 if parent else FULL_EVERY
        body: dict[str, Any] = {"version": 1}
        if parent is None or depth > FULL_EVERY:
            body.update(parent=None, set={p: list(e) for p, e in manifest.items()}, gone=[])
            depth = 0
        else:
            old = parent[1]
            changed = {p: list(e) for p, e in manifest.items() if old.get(p) != e}
            body.update(parent=parent[0], set=changed, gone=sorted(old.keys() - manifest.keys()))
        _make_folder(self.snapshots)
        data = json.dumps(body, separators=(",", ":")).encode()
        write_atomically(self.snapshots / f"{snapshot_id}.json", data, mode=0o600, sync=False)
        write_atomically(self.folder / "latest", snapshot_id.encode(), mode=0o600, sync=False)
        self._depths[snapshot_id] = depth

    def read(self, snapshot_id: str) -> Manifest | None:
        """The manifest `snapshot_id`, its parents followed; None when one is missing or bad."""
        chain: list[dict[str, Any]] = []
        wanted: str | None = snapshot_id
        while wanted is not None:
            body = self._body(wanted)
            if body is None or len(chain) > FULL_EVERY:
                return None
            chain.append(body)
            wanted = body["parent"]
        manifest: Manifest = {}
        for body in reversed(chain):
            for path in body["gone"]:
                manifest.pop(path, None)
            for path, raw in body["set"].items():
                entry = _entry(raw)
                if entry is None:
                    return None
                manifest[path] = entry
        self._depths[snapshot_id] = len(chain) - 1
        return manifest

    def latest(self) -> str | None:
        """The id of the newest manifest, if there is one."""
        try:
            text = (self.folder / "latest").read_text().strip()
        except (OSError, UnicodeDecodeError):
            return None
        return text if SNAPSHOT_ID.fullmatch(text) else None

    def _body(self, snapshot_id: str) -> dict[str, Any] | None:
        if not SNAPSHOT_ID.fullmatch(snapshot_id):
            return None
        try:
            body = json.loads((self.snapshots / f"{snapshot_id}.json").read_bytes())
        except (OSError, ValueError):
            return None
        ok = (
            isinstance(body, dict)
            and isinstance(body.get("set"), dict)
            and isinstance(body.get("gone"), list)
            and (body.get("parent") is None or isinstance(body.get("parent"), str))
        )
        return body if ok else None


def _entry(raw: Any) -> Entry | None:
    """An entry as a manifest holds it, checked."""
    if not isinstance(raw, list) or len(raw) != len(Entry._fields):
        return None
    kind, *numbers, data, name_only = raw
    if kind not in (FILE, DIR, LINK, OTHER):
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        return None
    if not (data is None or isinstance(data, str)):
        return None
    if name_only not in (None, LARGE, SKIPPED, SPECIAL, SECRET):
        return None
    return Entry(kind, *numbers, data=data, name_only=name_only)


def _make_folder(folder: Path) -> None:
    """`folder` and those of its parents that are missing, owner-only."""
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        with contextlib.suppress(FileExistsError):
            made.mkdir(mode=0o700)
