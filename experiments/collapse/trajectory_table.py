"""The table behind ``fig_collapse_trajectory`` at full size, kept in the archive.

The nine ``collapse.stack_*`` claims decide on random-weight stacks (n = d = 256, 48 layers, 64
stacks a case at full size; :func:`~.stack_checks.trajectory_config`) that take about 20 CPU
minutes to simulate. Their figure draws the same paired gaps. So that ``resharpen figs
--profile full`` draws it without that computation, the per-layer rows of the nine cases are
kept in the archive (``results/full/collapse_stacks/trajectories.json.gz``)::

    {"provenance": {...}, "rows": [{"norm", "mlp", "k", "config", "gap", "se", "measured",
                                    "predicted", "q"}, ...]}

with gap_l, se_l, the mean measured and predicted t_sim per layer (:func:`~.stack_checks.
paired_gaps`) and q, the simultaneous interval's quantile (:func:`~.stack_checks.
interval_status`). The claims never read it (they simulate, so that a change to the code is
seen by them and by the mutation test); the figure reads it only when every row's config is
the one the claims run now, and computes otherwise. tests/collapse/test_trajectory_table.py
holds the archived rows to the claims' full-size records.

Written by ``python -m resharpen.experiments.collapse.trajectory_table --write`` (about 20 CPU
minutes), on a clean checkout so that its provenance names the commit.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from resharpen.experiments.collapse.stack_checks import (interval_status, paired_gaps,
                                                         trajectory_config)
from resharpen.experiments.training.archive import cache_folder

CASES = tuple((norm, mlp, k) for norm, mlp in (("post", None), ("post", "swiglu"),
                                               ("pre", "swiglu")) for k in (1.0, 2.0, 4.0))
"""(norm, mlp, init-variance multiplier) of the nine stack claims, in the figure's order."""
TABLE = cache_folder("collapse_stacks") / "trajectories.json"
"""The archived table (kept compressed: ``trajectories.json.gz``)."""


def rows(profile: str) -> list[dict]:
    """The nine cases' per-layer rows at ``profile``, computed (the claims' own stacks)."""
    out = []
    for norm, mlp, k in CASES:
        cfg = trajectory_config(profile, norm, mlp, k)
        paired = paired_gaps(cfg)
        q = interval_status(paired["gap"], paired["se"], cfg.samples)["q"]
        out.append({"norm": norm, "mlp": mlp, "k": k, "config": asdict(cfg), "q": q,
                    **{key: [float(x) for x in paired[key]]
                       for key in ("gap", "se", "measured", "predicted")}})
    return out


def archived_rows(profile: str, path: Path = TABLE) -> list[dict] | None:
    """The archived rows when ``profile`` is full and every row's config is the one
    :func:`~.stack_checks.trajectory_config` gives now, in :data:`CASES` order; else None (no
    table, another profile, or a table made for other stacks)."""
    from resharpen.experiments.common.stored import read_text_file, stored_file

    if profile != "full" or not stored_file(path).is_file():
        return None
    found = json.loads(read_text_file(path, "archived trajectory table", "JSON file"))["rows"]
    wanted = [json.loads(json.dumps(asdict(trajectory_config(profile, *case))))
              for case in CASES]
    if [r["config"] for r in found] != wanted:
        return None
    return found


def write(path: Path = TABLE, profile: str = "full") -> Path:
    """Compute the rows at ``profile`` and write them, with the run's provenance, as the
    archive's compressed ``path`` (``.gz``); returns the file written."""
    from resharpen.experiments.common.io import atomic_write_bytes
    from resharpen.experiments.common.json_text import dumps_json
    from resharpen.experiments.common.stored import compress_bytes, compressed_path
    from resharpen.experiments.common.provenance import provenance

    made = provenance(profile)  # before the work: the tree the rows are computed on
    text = dumps_json({"provenance": made, "rows": rows(profile)}, indent=None) + "\n"
    target = compressed_path(Path(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_bytes(target, compress_bytes(text.encode("utf-8")))


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Compute the nine stack claims' per-layer "
                                     "rows at full size and write them into the archive.")
    parser.add_argument("--write", action="store_true", required=True)
    parser.parse_args()
    print(f"wrote {write()}")
