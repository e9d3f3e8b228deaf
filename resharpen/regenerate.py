"""Every generated file, brought up to date after a claim is added, changed or removed.

    make regenerate                                  # = python -m resharpen.regenerate
    python -m resharpen.regenerate --dry-run         # what would run; nothing written
    python -m resharpen.regenerate --only ID         # rerun ID too (its check changed)

A claim with its figure is the three files one edits: its entry in the declaration file beside
its claims module, its check, and its figure script ``paper_figs/<slice>/fig_*.py``. Everything
else that names it is generated, in two steps.

1. **The records a run makes**, for each claim whose entry is missing or stale
   (:func:`stale`), and each claim of ``--only``:

   * the quick baseline, ``experiments/configs/ledger/quick.json``: stale when its status is
     not the claim's declared quick status;
   * the quick record of the verdict pages, ``results/quick/ledger.json``: stale when its status
     is not the declared one or its source, statement, kind, tolerance or erratum flag is not
     the declaration's;
   * the mutation record, ``experiments/configs/ledger/mutation.json``: stale for a fast claim
     recorded skipped or whose recorded functions are not the derivations its check uses now
     (``mutants.targets``), and for a slow claim recorded neither skipped nor per function.

   The claims of the first two are run once in the quick profile (what ``resharpen verify
   --only ID`` runs) and their records written into both; the mutation test runs the claims of
   the third (what ``resharpen verify --mutate --only ID`` runs; a slow claim is recorded
   skipped by its cost class). The entries of claims no longer declared are dropped. A check
   whose code changed while its declaration did not is not seen as stale: name it with
   ``--only``.
2. **The files written from the declarations, the code and the records**: the commands of
   :data:`WRITERS`, in that order (the claim index, the docs' tables and passages quoted from
   the records, the verdict pages, the README's generated parts, the API reference).

The exit status is 1 when a claim's run gives another status than it declares (the baseline
then holds the run's status, and tests/core/test_baseline.py fails until the declaration or
the check is fixed), else 0. It runs from a checkout: the docs and tests are not installed.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The checkout: the folder holding ``resharpen/``, ``docs/`` and ``tests/``."""
WRITERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("resharpen/claims_index.json", ("-m", "resharpen.claim_index", "--write")),
    ("docs: the passages quoted from the mutation record",
     ("tests/core/test_docs_from_records.py", "--write")),
    ("docs/othello_search.md: the Othello study's table (from its archive)",
     ("tests/languages/test_othello_study_table.py", "--write")),
    ("docs/task_training.md: the full language grid's two tables (from its archive)",
     ("tests/languages/test_grid_tables.py", "--write")),
    ("docs/verdicts/ (from the declarations and the quick and full records)",
     ("-m", "resharpen.verdicts", "--write")),
    ("README.md: the verdict table and the family counts; docs/ledger.md: the table of non-PASS "
     "claims; docs/run_times.md",
     ("-m", "resharpen.front_page", "--write")),
    ("docs/api.md: the reference (from the docstrings)", ("tests/core/test_api.py", "--write")),
)
"""(what it writes, the arguments of ``python``) of every generated file's command, in the
order they run: each reads only declarations, code and records, none another's output but the
front page, which reads the verdict pages' counts."""
RECORD_FIELDS = ("source", "statement", "kind", "tolerance")
"""The declared fields a quick record repeats (with ``erratum``); one that differs is stale."""


def stale(declared: dict[str, dict], baseline: dict[str, dict], quick: dict[str, dict],
          record: dict[str, dict], functions: dict[str, set[str]]) -> dict[str, list[str]]:
    """The declared claims whose entry is missing or stale, per record (``baseline``,
    ``quick``, ``mutation``), each sorted: ``declared`` are the declarations
    (``all_declarations``), ``baseline`` the quick baseline's entries, ``quick`` the quick
    record's records, ``record`` the mutation record's entries, ``functions`` the names of the
    derivations each fast claim's check uses now (``mutants.targets``)."""
    def record_stale(claim_id: str, entry: dict) -> bool:
        found = quick.get(claim_id)
        return found is None or found["status"] != entry["quick"] \
            or any(found.get(f) != entry[f] for f in RECORD_FIELDS) \
            or found.get("erratum") != entry.get("erratum", False)

    def mutation_stale(claim_id: str, entry: dict) -> bool:
        found = record.get(claim_id)
        if found is None:
            return True
        if entry["cost"] == "fast":
            return found["verdict"] == "skipped" \
                or set(found.get("functions") or {}) != functions.get(claim_id, set())
        return found["verdict"] != "skipped" and not found.get("functions")

    return {"baseline": sorted(i for i, e in declared.items()
                               if i not in baseline or baseline[i]["status"] != e["quick"]),
            "quick": sorted(i for i, e in declared.items() if record_stale(i, e)),
            "mutation": sorted(i for i, e in declared.items() if mutation_stale(i, e))}


def undeclared(declared: dict[str, dict], *entries: dict[str, dict]) -> list[str]:
    """The ids of ``entries`` (records keyed by claim id) that no claim declares, sorted."""
    return sorted({claim_id for found in entries for claim_id in found} - set(declared))


def run_records(declared: dict[str, dict], only: list[str] | None, workers: int,
                dry_run: bool) -> list[str]:
    """Step 1: run the claims whose records are missing or stale (and those of ``only``) and
    write their records; drop the records of claims no longer declared. Returns one line per
    claim whose run's status is not its declared quick status."""
    from resharpen import verdicts
    from resharpen.claims import all_claims
    from resharpen.experiments import ledger
    from resharpen.experiments.common.io import atomic_write_text
    from resharpen.experiments.common.progress import per_item
    from resharpen.experiments.common.provenance import provenance
    from resharpen.experiments.ledger import baseline, mutants, mutation, mutation_record

    made = provenance("quick")  # before any write: the tree the claims run on, not ours
    claims = {c.id: c for c in all_claims()}
    base = baseline.read(baseline.default_path("quick"), "quick")
    quick = verdicts.read_records(verdicts.QUICK_LEDGER)
    record = mutation_record.read_record()
    functions = {c.id: {t.name for t in mutants.targets(c)} for c in claims.values()
                 if c.cost == "fast"}
    todo = stale(declared, base, quick, record, functions)
    try:
        forced = {c.id for c in ledger.select(list(claims.values()), only)} if only else set()
    except ValueError as exc:  # a pattern that matches no claim: a usage error
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    to_run = sorted(set(todo["baseline"]) | set(todo["quick"]) | forced)
    to_mutate = sorted(set(todo["mutation"]) | forced)
    gone = undeclared(declared, base, quick, record)
    for what, ids in (("run (quick baseline and record)", to_run),
                      ("mutation test", to_mutate), ("no longer declared, dropped", gone)):
        print(f"{what}: {', '.join(ids) if ids else 'none'}")
    if dry_run:
        return []
    records, results = [], []
    if to_run:
        with per_item("verify", len(to_run), "claim", lambda r: {r.id: r.status}) as done:
            records = ledger.run_claims([claims[i] for i in to_run], "quick", workers,
                                        on_done=done)
    if records or set(gone) & set(base):
        print(f"wrote {baseline.update(baseline.default_path('quick'), records, 'quick', declared)}")
    if records or set(gone) & set(quick):
        print(f"wrote {verdicts.update_quick([asdict(r) for r in records], declared, made=made)}")
    if to_mutate:
        with per_item("mutate", len(to_mutate), "claim", lambda r: {r.id: r.verdict}) as done:
            results = mutation.run_mutations([claims[i] for i in to_mutate], "quick",
                                             on_done=done)
    if results or set(gone) & set(record):
        text = mutation_record.updated_record(results, declared)
        print(f"wrote {atomic_write_text(mutation_record.RECORD, text)}")
    survivors = [r.id for r in results if r.verdict == "survives"]
    if survivors:
        print(f"survivors of the mutation test: {', '.join(survivors)}; write each one's "
              f"diagnosis into {mutation_record.RECORD.name} (docs/ledger.md, the mutation test)")
    return [f"{r.id}: declared quick = {declared[r.id]['quick']}, the run gives {r.status}"
            for r in records if r.status != declared[r.id]["quick"]]


def run_writers(dry_run: bool) -> None:
    """Step 2: each command of :data:`WRITERS`, in order, from the checkout."""
    for what, arguments in WRITERS:
        print(f"{what}: python {' '.join(arguments)}")
        if not dry_run:
            subprocess.run([sys.executable, *arguments], cwd=ROOT, check=True)


def main(argv: list[str] | None = None) -> int:
    from resharpen.experiments.ledger.declarations import all_declarations

    parser = argparse.ArgumentParser(
        prog="python -m resharpen.regenerate",
        description="Bring every generated file up to date after a claim is added, changed or "
                    "removed: run the claims whose records are missing or stale, then rewrite "
                    "the index, the docs' generated parts and the verdict pages.")
    parser.add_argument("--only", action="append", metavar="ID",
                        help="rerun this claim (an id or glob; repeatable) even if its records "
                             "look current: its check changed")
    parser.add_argument("--workers", type=int, default=1,
                        help="processes for the claims' quick runs (default 1)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print what would run and be written; change nothing")
    args = parser.parse_args(argv)
    if not (ROOT / "tests").is_dir():
        parser.error(f"{ROOT} is not a checkout (no tests/ beside resharpen/)")
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    wrong = run_records(all_declarations(), args.only, args.workers, args.dry_run)
    run_writers(args.dry_run)
    for line in wrong:
        print(f"status differs from the declaration: {line}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
