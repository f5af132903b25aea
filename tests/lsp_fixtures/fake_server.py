"""A tiny language server for the cases real servers cannot be made to show on demand: one that
never answers, one that asks the client things, one that records what it was sent.

    fake_server.py --log FILE [--hang METHOD]... [--ask] [--apply] [--flood BYTES]
                   [--crash-on METHOD] [--garbage-on METHOD] [--mute-after METHOD]

`--crash-on`: exit with status 3 when that request arrives (once per file named by
`--once FILE`: a second server started by the client behaves). `--garbage-on`: answer that
request with bytes that are not the protocol, then carry on. `--mute-after`: answer that
request, then close stdin and stdout and linger: to the client a dead server whose exit has
not been seen yet (as a killed one is, on a busy machine, until it is reaped).

Every message received is appended to FILE as one JSON line; the answers the client gives to
the server's own requests are recorded there too (they carry an id and no method).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def read_message(stream) -> dict | None:
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            if length is not None:
                break
            continue
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return json.loads(stream.read(length))


def send(message: dict) -> None:
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    sys.stdout.buffer.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--hang", action="append", default=[])
    parser.add_argument("--ask", action="store_true")
    parser.add_argument("--apply", action="store_true", help="edit the first opened file")
    parser.add_argument("--flood", type=int, default=0, help="bytes of stderr before starting")
    parser.add_argument("--crash-on", default=None)
    parser.add_argument("--garbage-on", default=None)
    parser.add_argument("--mute-after", default=None)
    parser.add_argument("--once", default=None, help="misbehave only while FILE does not exist")
    args = parser.parse_args()
    if args.once and Path(args.once).exists():
        args.crash_on = args.garbage_on = args.mute_after = None
        args.hang = []
    elif args.once:
        Path(args.once).write_text("misbehaved once")
    log = Path(args.log)
    print("fake server starting", file=sys.stderr, flush=True)
    if args.flood:
        sys.stderr.write("x" * args.flood + "\nthe end of the flood\n")
        sys.stderr.flush()
    stdin = sys.stdin.buffer
    while True:
        message = read_message(stdin)
        if message is None:
            return
        with log.open("a") as f:
            f.write(json.dumps(message) + "\n")
        method = message.get("method")
        if method in args.hang:
            continue
        if method is not None and method == args.crash_on:
            print("fake server: crashing on purpose", file=sys.stderr, flush=True)
            sys.exit(3)
        if method is not None and method == args.garbage_on:
            sys.stdout.buffer.write(b"\x00\xffnot the protocol\r\nContent-Length: zz\r\n\r\n{[")
            sys.stdout.buffer.flush()
            continue
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {
                        "capabilities": {"textDocumentSync": 1, "hoverProvider": True},
                        "serverInfo": {"name": "fake"},
                    },
                }
            )
        elif method == "initialized" and args.ask:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": "c1",
                    "method": "workspace/configuration",
                    "params": {"items": [{"section": "fake"}, {"section": "other"}]},
                }
            )
            send(
                {
                    "jsonrpc": "2.0",
                    "id": "c2",
                    "method": "window/workDoneProgress/create",
                    "params": {"token": "t"},
                }
            )
            send(
                {
                    "jsonrpc": "2.0",
                    "id": "c3",
                    "method": "client/registerCapability",
                    "params": {
                        "registrations": [
                            {"id": "r1", "method": "textDocument/diagnostic", "registerOptions": {}}
                        ]
                    },
                }
            )
            send({"jsonrpc": "2.0", "id": "c4", "method": "fake/unknown", "params": {}})
        elif method == "textDocument/didOpen" and args.apply:
            args.apply = False
            uri = message["params"]["textDocument"]["uri"]
            edit = {
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
            }
            edit["newText"] = "# applied by the server\n"
            send(
                {
                    "jsonrpc": "2.0",
                    "id": "c5",
                    "method": "workspace/applyEdit",
                    "params": {"edit": {"changes": {uri: [edit]}}},
                }
            )
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif method == "exit":
            return
        elif method == "textDocument/hover":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {"contents": {"kind": "markdown", "value": "fake hover"}},
                }
            )
        elif method == "textDocument/diagnostic":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {"kind": "full", "items": []}})
        elif "id" in message and method is not None:
            send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        if method is not None and method == args.mute_after:
            os.close(0)
            os.close(1)
            time.sleep(30)
            return
        time.sleep(0)


if __name__ == "__main__":
    main()
