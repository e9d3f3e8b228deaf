"""The numbers the package produces, in one JSON file, so two commits can be compared.

    python tests/number_fingerprint.py --ledger out/ledger.json --figs out/fp-figs --out fp.json
    python tests/number_fingerprint.py --compare before.json after.json [--ids docs/claim_ids.json]

The first form runs every figure script with ``Figure.savefig`` patched to record what each
figure draws (the x/y data of every line, the offsets and paths of every collection, the pixels
of every image, every text), and reads a ledger JSON written by ``resharpen verify --json``
(timings dropped). ``--layout flat`` reads a commit from before the ``resharpen`` namespace (put
that checkout first on PYTHONPATH), so a commit before a redesign and one after it can be
recorded the same way.

The second form compares two fingerprints, renaming claim ids with an optional old -> new
mapping, and exits 1 with the differences if any number differs. This is how the redesign of
the package was shown to change no number (docs/architecture.md).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path


def _array(values) -> list:
    import numpy as np

    a = np.ma.filled(np.ma.asarray(values, dtype=float), np.nan)
    return [None if x != x else float(x) for x in a.ravel()] + [list(a.shape)]


def figure_data(fig) -> dict:
    """Everything a figure draws, axes by axes, as plain lists (NaN -> None)."""
    axes = []
    for ax in fig.axes:
        entry = {"title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
                 "xscale": ax.get_xscale(), "yscale": ax.get_yscale(), "lines": [],
                 "collections": [], "images": [], "texts": [t.get_text() for t in ax.texts]}
        for line in ax.get_lines():
            entry["lines"].append({"label": line.get_label(), "xy": _array(line.get_xydata())})
        for coll in ax.collections:
            paths = [_array(p.vertices) for p in coll.get_paths()]
            entry["collections"].append({"label": coll.get_label(),
                                         "offsets": _array(coll.get_offsets()), "paths": paths})
        for image in ax.get_images():
            entry["images"].append(_array(image.get_array()))
        axes.append(entry)
    return {"axes": axes, "suptitle": fig._suptitle.get_text() if fig._suptitle else ""}


def record_figures(outdir: Path, profile: str = "quick", package: str = "resharpen") -> dict:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    if package == "resharpen":
        from resharpen.paper_figs import run_all
    else:  # the layout before the resharpen namespace: a top-level paper_figs on PYTHONPATH
        from paper_figs import run_all  # type: ignore[no-redef]
    data: list[dict] = []
    last: list = [None]  # a figure saved as PNG and then PDF is recorded once
    original = Figure.savefig

    def savefig(self, fname, *args, **kwargs):
        if self is not last[0]:
            data.append(figure_data(self))
            last[0] = self
        return original(self, fname, *args, **kwargs)

    Figure.savefig = savefig
    try:
        written = run_all(profile, outdir)
    finally:
        Figure.savefig = original
    # figures are saved to buffers, then written under their stem: pair them in order
    stems = list(dict.fromkeys(Path(p).stem for p in written))
    if len(data) != len(stems):
        raise RuntimeError(f"recorded {len(data)} figures but {len(stems)} were written")
    return dict(zip(stems, data))


def ledger_numbers(path: Path) -> dict:
    claims = json.loads(Path(path).read_text())["claims"]
    return {c["id"]: {k: v for k, v in c.items() if k != "seconds"} for c in claims}


def digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def compare(before: dict, after: dict, renames: dict[str, str]) -> list[str]:
    problems = []
    old_ledger = {renames.get(k, k): v for k, v in before["ledger"].items()}
    for cid in sorted(set(old_ledger) | set(after["ledger"])):
        a, b = old_ledger.get(cid), after["ledger"].get(cid)
        if a is None or b is None:
            problems.append(f"claim {cid}: only {'after' if a is None else 'before'}")
            continue
        a = {k: v for k, v in a.items() if k != "id"}
        b = {k: v for k, v in b.items() if k != "id"}
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                problems.append(f"claim {cid}.{key}: {a.get(key)!r} -> {b.get(key)!r}")
    for stem in sorted(set(before["figures"]) | set(after["figures"])):
        a, b = before["figures"].get(stem), after["figures"].get(stem)
        if a is None or b is None:
            problems.append(f"figure {stem}: only {'after' if a is None else 'before'}")
        elif digest(a) != digest(b):
            problems.append(f"figure {stem}: data differ ({digest(a)} -> {digest(b)})")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledger", type=Path, help="ledger JSON from `resharpen verify --json`")
    parser.add_argument("--figs", type=Path, help="folder to write the figures into")
    parser.add_argument("--out", type=Path, help="fingerprint JSON to write")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--ids", type=Path, help="JSON object mapping old claim ids to new ones")
    parser.add_argument("--layout", choices=("resharpen", "flat"), default="resharpen",
                        help="flat: a commit from before the resharpen namespace (put it on PYTHONPATH)")
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        renames = json.loads(args.ids.read_text()) if args.ids else {}
        problems = compare(before, after, renames)
        for line in problems:
            print(line)
        print(f"{len(after['ledger'])} claims, {len(after['figures'])} figures: "
              + ("identical" if not problems else f"{len(problems)} differences"))
        return 1 if problems else 0
    figures = record_figures(args.figs, package=args.layout)
    fingerprint = {"ledger": ledger_numbers(args.ledger), "figures": figures}
    args.out.write_text(json.dumps(fingerprint, sort_keys=True))
    print(f"{len(fingerprint['ledger'])} claims, {len(figures)} figures -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
