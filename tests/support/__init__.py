"""What the tests share, one copy each (tests/conftest.py puts tests/ on sys.path):

- env.py: the environment of what a test runs (`clean_env`), and of this process (`isolate`);
- program.py: the real `mm` in a subprocess (`mm`, `MM`);
- engine.py: the engine factory (`make_engine`) and a turn on it (`turn`, `of`);
- waiting.py: waiting for a condition, never for a fixed time (`wait_until`, `await_until`);
- processes.py: looks at /proc (groups, children, command lines);
- folders.py: the demo's project in a folder, the fixed folder of the pictures under a lock;
- terminal.py: the real `mm` in tmux;
- editor.py: an ACP editor that knows when it has handled every update;
- scripted_server/: the OpenAI-compatible model server on 127.0.0.1 (server.py), the script
  it answers from (script.py: `Reply`, `call`...) and the SSE it sends (sse.py);
  scripted_model.py: a model in the process;
- fetch_server.py: the web server of fetch_content's tests; mcp_server.py (run as a child) and
  mcp_helpers.py: the MCP tests' server and what they share;
- session_helpers.py: a session's journal read back as `--resume` reads it;
- events.py: the events a test feeds a front end by hand (`tool_started`, `text_delta`), made
  as the engine makes them;
- acp_helpers.py: the real `mm -acp` driven by an editor that records what arrives;
- the helpers of one family of tests: window_helpers.py, ask_helpers.py (and garbage_child.py,
  a child it runs), fault_parts.py, attack_mm.py (the sandbox boundary's hostile command).

Every helper of the tests lives here, and is imported as `support.<name>`. The fixtures built on
them are in tests/conftest.py.
"""
