"""What every layer of mm shares, depending on nothing but the standard library: the events the
engine emits and the front ends consume (events), redaction (redact), asking agents (asking), and
small helpers: files read without blocking and written atomically (files), stopping a process
group (processes), ellipsizing and agents' names (text). Nothing here imports the rest of mm."""
