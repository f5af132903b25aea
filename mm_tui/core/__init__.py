"""What every layer of mm shares, depending on nothing but the standard library: the events the
engine emits and the front ends consume (events), redaction (redact), asking agents (asking), the
sandbox of the commands (sandbox: its policy; launcher and launcher_process: the process they
start from; seccomp: the network filter) and the file tools' check (file_access), the record of
trusted project configs (trust), text made safe for a terminal (terminal_text), and small
helpers: files read without blocking and written atomically (files), stopping a process group
(processes), ellipsizing and agents' names (text). Nothing here imports the rest of mm."""
