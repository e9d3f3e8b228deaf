# Two entry points, each self-contained on a fresh machine with python3 and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: reproduce test test-slow bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev,distributed]'
	touch $(STAMP)

# The ledger exits 1 when a claim fails; the figures are still written, then that status is kept.
reproduce: $(STAMP)
	@status=0; \
	$(BIN)/resharpen verify --profile quick --workers 2 --json out/ledger.json --markdown out/ledger.md || status=$$?; \
	$(BIN)/resharpen figs --profile quick || exit $$?; \
	if [ $$status -ne 0 ]; then echo "reproduce: figures written; some claims FAIL (out/ledger.md, README 'What fails')"; fi; \
	exit $$status

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

bench: $(STAMP)
	for f in benchmarks/bench_*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) out
