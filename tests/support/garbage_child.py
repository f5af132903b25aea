"""A child for ask_agent's fault tests: the real `mm -acp` (arguments passed through), whose
stdout gets one line that is not ACP right after its first session update. Only the first
child of a test misbehaves: it leaves the file named by GARBAGE_FLAG behind, and a child that
finds the file relays faithfully."""

from __future__ import annotations

import os
import subprocess
import sys
import threading


def main() -> int:
    flag = os.environ["GARBAGE_FLAG"]
    child = subprocess.Popen(
        [sys.executable, "-m", "mm_tui.cli", *sys.argv[1:]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None

    def feed() -> None:
        for line in sys.stdin.buffer:
            child.stdin.write(line)
            child.stdin.flush()
        child.stdin.close()

    threading.Thread(target=feed, daemon=True).start()
    out = sys.stdout.buffer
    for line in child.stdout:
        out.write(line)
        out.flush()
        if b'"session/update"' in line and not os.path.exists(flag):
            open(flag, "w").close()
            out.write(b"garbage: this is not ACP\n")
            out.flush()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
