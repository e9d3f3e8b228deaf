"""One script per figure. Each module ``fig_*.py`` defines ``make(profile, outdir) -> list[Path]``
(writing PNG and PDF with the Agg backend) and names, in its docstring, the claims it shows.
`resharpen figs` runs them all."""
from __future__ import annotations

import fnmatch
import importlib
import pkgutil
from pathlib import Path

import matplotlib

matplotlib.use("Agg")


def figure_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("fig_"))


def run_all(profile: str, outdir: Path, only: list[str] | None = None) -> list[Path]:
    from tqdm import tqdm

    from experiments.io import ensure_writable_dir

    names = figure_modules()
    if only:
        chosen = [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in only)]
        if not chosen:
            raise ValueError(f"no figure matches {only}; figures are {names}")
        names = chosen
    ensure_writable_dir(outdir)
    written: list[Path] = []
    for name in tqdm(names, desc="figs", unit="fig", disable=None):
        module = importlib.import_module(f"paper_figs.{name}")
        written.extend(module.make(profile, outdir))
    return written


def save(fig, outdir: Path, stem: str) -> list[Path]:
    """Save ``fig`` as ``stem.png`` and ``stem.pdf`` in ``outdir`` (atomically) and close it."""
    import io

    import matplotlib.pyplot as plt

    from experiments.io import atomic_write_bytes

    paths = []
    for ext in ("png", "pdf"):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=ext, dpi=150, bbox_inches="tight")
        paths.append(atomic_write_bytes(Path(outdir) / f"{stem}.{ext}", buffer.getvalue()))
    plt.close(fig)
    return paths
