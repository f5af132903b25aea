# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The language servers the lsp tests run: pylsp and basedpyright come with `.[lsp]`, clangd from Debian.
LSP_STAMP := $(VENV)/.lsp-servers

.PHONY: run test lint bench clean lsp-servers

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,lsp]'
	touch $(STAMP)

$(LSP_STAMP): | $(STAMP)
	command -v clangd >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends clangd; }
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
