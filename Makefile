# Two entry points, each self-contained on a fresh machine with python3 and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: reproduce test lint regenerate test-slow test-py310 bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev,distributed]'
	touch $(STAMP)

# The ledger is compared with the committed baseline of statuses
# (experiments/configs/ledger/quick.json): exit 0 when every status matches it, known FAILs
# included; exit 1 with the differences when a status changed in either direction. The figures
# and the self-contained HTML report (out/report.html) are written either way, then that status
# is kept. `figs` never trains, and exits 1 when a figure cannot be drawn: what the ledger does
# not train runs before it (the quick collapse demo's one run the claim collapse.training_collapse
# does not share, a few seconds; the quick Othello study, about 15 s; the quick sampled-label Set
# Complement sweeps, which no claim reads), so that every figure is drawn.
SAMPLED_SWEEPS := placements random_search placements_grid placements_multi_layer long_runs long_runs_v32

reproduce: $(STAMP)
	@status=0; \
	$(BIN)/resharpen verify --profile quick --workers 2 --json out/ledger.json --markdown out/ledger.md --baseline || status=$$?; \
	$(BIN)/resharpen collapse train --profile quick > /dev/null || exit $$?; \
	$(BIN)/resharpen langs run --grid experiments/configs/languages/othello.toml --profile quick > /dev/null || exit $$?; \
	for sweep in $(SAMPLED_SWEEPS); do \
		$(BIN)/resharpen sweep set_complement/$$sweep --profile quick --workers 2 > /dev/null || exit $$?; done; \
	$(BIN)/resharpen figs --profile quick || exit $$?; \
	$(BIN)/resharpen report --html out/report.html --ledger out/ledger.json --figs out/figs || exit $$?; \
	if [ $$status -ne 0 ]; then echo "reproduce: figures and out/report.html written; a claim's status differs from the baseline (see above; out/ledger.md)"; fi; \
	exit $$status

# The suite in TEST_WORKERS processes (pytest-xdist; one per core of the 2-core machine it is
# measured on); TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= 2
test: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)

# ruff with the rule set of pyproject.toml ([tool.ruff]): pyflakes and pycodestyle's errors, no
# formatting.
lint: $(STAMP)
	$(BIN)/ruff check .

# Every generated file, after a claim is added, changed or removed (its declaration, its check,
# its figure script): the claims whose quick baseline status, quick record or mutation entry is
# missing or stale run (only those), then the claim index, the docs' generated parts, the verdict
# pages and the README's counts are rewritten (resharpen/regenerate.py lists the commands).
# ARGS passes options: `make regenerate ARGS="--only ID"` reruns a claim whose check changed,
# `ARGS=--dry-run` says what would run.
regenerate: $(STAMP)
	$(BIN)/python -m resharpen.regenerate $(ARGS)

# Python 3.10 (the oldest allowed): the CLI parser and the torch-free tests (the theory, the config
# reader with its tomli fallback, the task suite and Othello) in a venv of their own. The torch
# CPU wheel on this machine is built for 3.11 only, so the torch tests run on 3.11 (`make test`).
PYTHON310 ?= $(firstword $(wildcard /root/.pyenv/versions/3.10*/bin/python3.10) $(shell command -v python3.10))
PY310_TESTS := tests/dynamics/test_norm_dynamics.py tests/collapse/test_collapse_theory.py \
	tests/core/test_config.py tests/core/test_python310.py tests/languages/test_othello.py \
	tests/languages/test_languages.py
test-py310:
	@if [ -z "$(PYTHON310)" ]; then echo "test-py310: no python3.10 on this machine; skipped"; exit 0; fi; \
	set -e; \
	[ -x .venv310/bin/python ] || $(PYTHON310) -m venv .venv310; \
	.venv310/bin/pip install --quiet numpy scipy sympy tqdm tomli pytest hypothesis; \
	.venv310/bin/pip install --quiet --no-deps -e .; \
	.venv310/bin/python -m resharpen --help > /dev/null; \
	for cmd in verify construct derive figs train sweep report langs tasks dynamics collapse; do \
		.venv310/bin/python -m resharpen $$cmd --help > /dev/null; done; \
	.venv310/bin/python -m pytest -q -p no:cacheprovider $(PY310_TESTS) \
		-k "not agrees_with_the_training_module"

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

bench: $(STAMP)
	for f in benchmarks/bench_*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .venv310 out
