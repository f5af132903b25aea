# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# What the tests run beside Python: pylsp and basedpyright come with `.[lsp]`; clangd (a third
# language server) and tmux (the real program in a terminal) come from Debian when missing.
LSP_STAMP := $(VENV)/.lsp-servers
APT_PACKAGES := clangd tmux

.PHONY: run test lint bench clean lsp-servers

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,lsp]'
	touch $(STAMP)

$(LSP_STAMP): | $(STAMP)
	missing=""; for p in $(APT_PACKAGES); do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; fi
	touch $(LSP_STAMP)

lsp-servers: $(LSP_STAMP)

run: $(STAMP)
	$(BIN)/mm $(ARGS)

test: $(STAMP) lsp-servers
	$(BIN)/ruff check mm_tui tests bench
	$(BIN)/lint-imports
	MM_REQUIRE_LSP=1 $(BIN)/python -m pytest -q $(PYTEST_ARGS)

bench: $(STAMP) lsp-servers
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV)
