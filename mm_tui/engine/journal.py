"""The session journal on disk: an append-only JSON Lines file and a small metadata file, written
by one writer thread so that saving never blocks the loop that runs the engine and the window.

Why a journal: a session of thousands of tool calls used to be rewritten whole, twice per call (a
save cost 277 ms at 2,000 calls, on the UI's loop). Appending costs what the new records cost,
whatever the length of the session.

- `Journal.create` opens a temporary file at once (so an unwritable folder is an error of the
  save that asked, on the caller's thread); the writer thread writes every record into it, syncs
  it and renames it over the journal. The same descriptor then takes the appends: after the
  rename it is the journal's own inode. A new session, and a session whose journal could not be
  written, start this way: the whole state lands at once, or not at all.
- `Journal.reopen` appends to an existing journal; a torn last line (mm was killed in the middle
  of a write) is cut off first, so the next record starts a line of its own.
- Records are serialised in the writer thread. A record is never changed once made (the session
  replaces a message instead of editing it), so the thread reads them safely.
- Each batch of records is written with one write(2) as soon as the thread gets to it ("flushed
  per event"); `sync` fsyncs (turn end, exit) and returns a future to wait on.
- A failed write cuts the file back to its last whole line and marks the journal failed; the
  session raises the error at its next save and starts a new journal with the whole state.
- The descriptor that writes a journal holds an exclusive `flock` on it for as long as the
  journal is open (`journal_lock.py`): one writer per journal, across processes.
- Reading the records back, and the folder's other files: `journal_files.py`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from mm_tui.core.files import TEMP_SUFFIX
from mm_tui.core.redact import Redactor
from mm_tui.engine.journal_files import fsync_folder, make_folder, remove_stale_temps, replace_file
from mm_tui.engine.journal_lock import (
    NOFOLLOW,
    lock_descriptor,
    open_for_append,
    release_descriptor,
)


def encode_record(record: dict[str, Any], redactor: Redactor) -> bytes:
    """One line of the journal. A known secret found in it is redacted (the last guard: whatever
    way an api key got into the history, not into a file)."""
    line = _dumps(record)
    if redactor.in_json(line):
        line = _dumps(redactor.data(record))
    return line + b"\n"


def _dumps(data: Any, indent: int | None = None) -> bytes:
    """JSON text; a value JSON cannot hold (none of mm's own) is written as its str(), so that a
    record is never lost for one odd value."""
    try:
        return json.dumps(data, ensure_ascii=False, indent=indent, default=str).encode()
    except UnicodeEncodeError:  # a lone surrogate from a model: only \u escapes carry it
        return json.dumps(data, indent=indent, default=str).encode()


class Journal:
    """One session's files. Its methods queue work for the writer thread and return at once,
    except `create`/`reopen`, which open the file on the caller's thread."""

    def __init__(
        self,
        path: Path,
        meta_path: Path,
        fd: int,
        size: int,
        temp: Path | None,
        key: tuple[int, int],
    ) -> None:
        self.path = path
        self.meta_path = meta_path
        self._fd: int | None = fd
        self._key = key  # the inode `fd` holds the lock of
        self._size = size  # bytes of whole lines written
        self._temp = temp  # until the first batch is renamed over `path`
        self._failure: OSError | None = None
        self._closed = False
        # the secrets kept out of the file: the session's (its engine's), set at each save
        self.redactor = Redactor()

    # -- opening (the caller's thread) ---------------------------------------------------------

    @classmethod
    def create(cls, path: Path, meta_path: Path) -> Journal:
        """A journal to be written whole by the first batch (see the module's docstring)."""
        make_folder(path.parent)
        remove_stale_temps(path.parent)
        temp = path.parent / f".{path.name}.{os.getpid()}{TEMP_SUFFIX}"
        # A leftover of an earlier process that had this pid, or a link someone put there: the
        # new file is created afresh and never written through a link.
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        # 0o600: tool output in the history may hold whatever the tools read.
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | NOFOLLOW
        fd, key = lock_descriptor(os.open(temp, flags, 0o600))  # a new inode: never busy
        return cls(path, meta_path, fd, 0, temp, key)

    @classmethod
    def reopen(
        cls,
        path: Path,
        meta_path: Path,
        whole: int,
        claimed: tuple[int, tuple[int, int]] | None = None,
    ) -> Journal:
        """Append to `path`, whose first `whole` bytes are whole lines (a torn tail is cut).
        `claimed`: the locked descriptor the session took when it was opened (`open_for_append`),
        else the file is opened and locked now (JournalBusy when another process has it).
        A resumed session's folder is swept as a new one's is: a run killed while it replaced
        the session's `.meta.json` left its temporary file there."""
        remove_stale_temps(path.parent)
        fd, key = claimed if claimed is not None else open_for_append(path)
        try:
            if os.fstat(fd).st_size != whole:
                os.ftruncate(fd, whole)
        except BaseException:
            release_descriptor(fd, key)
            raise
        return cls(path, meta_path, fd, whole, None, key)

    # -- the caller's side ---------------------------------------------------------------------

    def take_failure(self) -> OSError | None:
        """The error of a failed write, once; the journal takes nothing more after one."""
        failure, self._failure = self._failure, None
        return failure

    def append(self, records: Sequence[dict[str, Any]], meta: dict[str, Any] | None) -> None:
        _writer().put(self, "append", records, meta)

    def sync(self) -> Future[None]:
        """Everything queued so far is on disk when the future is done."""
        return _writer().put(self, "sync")

    def close(self) -> Future[None]:
        """Write what is queued, sync, close; later appends are dropped."""
        future = _writer().put(self, "close")
        self._closed = True
        return future

    # -- the writer thread's side ----------------------------------------------------------------

    def _write(self, records: Sequence[dict[str, Any]], meta: dict[str, Any] | None) -> None:
        if self._fd is None:
            return
        redactor = self.redactor
        data = b"".join(encode_record(r, redactor) for r in records)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            self._size += len(data)
            if self._temp is not None:  # the first batch: the whole state, then in place
                os.fsync(self._fd)
                os.replace(self._temp, self.path)
                self._temp = None
                fsync_folder(self.path.parent)
            if meta is not None:
                # every field through the redactor: a title or a path can hold a key too
                meta = redactor.data(meta)
                replace_file(self.meta_path, _dumps(meta, indent=1) + b"\n", sync=False)
        except OSError as exc:
            self._fail(exc)

    def _sync(self) -> None:
        if self._fd is None:
            return
        try:
            os.fsync(self._fd)
        except OSError as exc:
            self._fail(exc)

    def _close(self) -> None:
        self._sync()
        if self._fd is not None:
            release_descriptor(self._fd, self._key)
            self._fd = None
        if self._temp is not None:  # never renamed into place: nothing of it is worth keeping
            with contextlib.suppress(OSError):
                self._temp.unlink()

    def _fail(self, exc: OSError) -> None:
        """Cut back to the last whole line (a half line would end the file's readability), close,
        and keep the error for the session's next save."""
        self._failure = exc
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
            release_descriptor(self._fd, self._key)
            self._fd = None
        if self._temp is not None:
            with contextlib.suppress(OSError):
                self._temp.unlink()
            self._temp = None


class _Writer:
    """The one writer thread of the process; it serves every open journal in queue order."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Journal, str, Any, Any, Future[None]]] = (
            queue.SimpleQueue()
        )
        self._open: set[Journal] = set()
        self._thread = threading.Thread(target=self._run, name="mm-journal", daemon=True)
        self._thread.start()
        atexit.register(self.close_all)

    def put(self, journal: Journal, op: str, records: Any = (), meta: Any = None) -> Future[None]:
        future: Future[None] = Future()
        self._queue.put((journal, op, records, meta, future))
        return future

    def _run(self) -> None:
        held = None  # an item taken while batching, served next
        while True:
            item, held = held or self._queue.get(), None
            journal, op, records, meta, future = item
            done = [future]
            try:
                if op == "append":
                    self._open.add(journal)
                    batch = list(records)
                    # Appends already queued for the same journal go in the same write.
                    while True:
                        try:
                            nxt = self._queue.get_nowait()
                        except queue.Empty:
                            break
                        if nxt[0] is not journal or nxt[1] != "append":
                            held = nxt
                            break
                        batch.extend(nxt[2])
                        meta = nxt[3] if nxt[3] is not None else meta
                        done.append(nxt[4])
                    journal._write(batch, meta)
                elif op == "sync":
                    journal._sync()
                elif op == "close":
                    journal._close()
                    self._open.discard(journal)
                elif op == "call":
                    records()
                for f in done:
                    f.set_result(None)
            except BaseException as exc:  # noqa: BLE001 - the thread must go on serving
                for f in done:
                    if not f.done():
                        f.set_exception(exc)

    def close_all(self, timeout: float = 10.0) -> None:
        """At exit: write and sync what every open journal has queued."""
        futures = [journal.close() for journal in list(self._open) if not journal._closed]
        for future in futures:
            with contextlib.suppress(Exception):
                future.result(timeout)

    def call(self, fn: Callable[[], None]) -> Future[None]:
        """Run `fn` in the writer thread, after what is queued (tests: a barrier)."""
        future: Future[None] = Future()
        self._queue.put((None, "call", fn, None, future))  # type: ignore[arg-type]
        return future


_the_writer: _Writer | None = None
_writer_lock = threading.Lock()


def _writer() -> _Writer:
    global _the_writer
    if _the_writer is None:
        with _writer_lock:
            if _the_writer is None:
                _the_writer = _Writer()
    return _the_writer


def flush_all(timeout: float = 10.0) -> None:
    """Wait until the writer thread has done everything queued so far (tests, exit)."""
    _writer().call(lambda: None).result(timeout)


# -- reading -------------------------------------------------------------------------------------
