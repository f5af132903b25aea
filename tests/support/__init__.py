"""What the tests share, one copy each (tests/conftest.py puts tests/ on sys.path):

- env.py: the environment of what a test runs (`clean_env`), and of this process (`isolate`);
- program.py: the real `mm` in a subprocess (`mm`, `MM`);
- engine.py: the engine factory (`make_engine`) and a turn on it (`turn`, `of`);
- waiting.py: waiting for a condition, never for a fixed time (`wait_until`, `await_until`);
- processes.py: looks at /proc (groups, children, command lines);
- folders.py: the demo's project in a folder, the fixed folder of the pictures under a lock;
- terminal.py: the real `mm` in tmux;
- editor.py: an ACP editor that knows when it has handled every update.

The fixtures built on them are in tests/conftest.py. The scripted servers and models, and what
reads session files, stay beside the tests (scripted_server.py, scripted_model.py,
session_helpers.py...), as do the helpers of one family of tests (window_helpers.py,
ask_helpers.py, fault_parts.py).
"""
