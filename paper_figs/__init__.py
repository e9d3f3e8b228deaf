"""One script per figure, grouped by slice. Each module ``<slice>/fig_*.py`` defines ``make(profile, outdir) -> list[Path]``
(writing PNG and PDF with the Agg backend) and names, in its docstring, the claims it shows.
`resharpen figs` runs them all."""
from __future__ import annotations

import fnmatch
import importlib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")


FIGURES: dict[str, str] = {
    "fig_collapse_deaveraging": "collapse",
    "fig_collapse_gradients": "collapse",
    "fig_collapse_similarity": "collapse",
    "fig_collapse_training": "collapse",
    "fig_dyn_gamma": "dynamics",
    "fig_dyn_initial_velocity": "dynamics",
    "fig_dyn_mc_ratio": "dynamics",
    "fig_dyn_random_stacks": "dynamics",
    "fig_fit_margins": "set_complement",
    "fig_langtrain_curves": "languages",
    "fig_langtrain_othello_study": "languages",
    "fig_sc_attn_out_sv": "set_complement",
    "fig_sc_invalid_mass": "set_complement",
    "fig_sc_margins": "set_complement",
    "fig_train_averaging": "set_complement",
    "fig_train_dropout": "set_complement",
    "fig_train_grids": "set_complement",
    "fig_train_long_runs": "set_complement",
    "fig_train_margins": "set_complement",
    "fig_train_placements": "set_complement",
}
"""Every figure module and the slice it belongs to (``paper_figs/<slice>/<module>.py``)."""


def figure_modules() -> list[str]:
    return sorted(FIGURES)


def figure_module(name: str):
    """The module ``resharpen.paper_figs.<slice>.<name>`` (imported on demand: figures are heavy)."""
    return importlib.import_module(f"resharpen.paper_figs.{FIGURES[name]}.{name}")


def select_figures(only: list[str] | None = None) -> list[str]:
    """The figure modules matching any glob in ``only`` (all when None or empty); ValueError
    when none matches."""
    names = figure_modules()
    if only:
        chosen = [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in only)]
        if not chosen:
            raise ValueError(f"no figure matches {only}; figures are {names}")
        names = chosen
    return names


def run_all(profile: str, outdir: Path, only: list[str] | None = None) -> list[Path]:
    from tqdm import tqdm

    from resharpen.experiments.core.io import ensure_writable_dir

    names = select_figures(only)
    ensure_writable_dir(outdir)
    written: list[Path] = []
    for name in tqdm(names, desc="figs", unit="fig", disable=None):
        written.extend(figure_module(name).make(profile, outdir))
    return written


def save(fig, outdir: Path, stem: str) -> list[Path]:
    """Save ``fig`` as ``stem.png`` and ``stem.pdf`` in ``outdir`` (atomically) and close it."""
    import io

    import matplotlib.pyplot as plt

    from resharpen.experiments.core.io import atomic_write_bytes

    paths = []
    for ext in ("png", "pdf"):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=ext, dpi=150, bbox_inches="tight")
        paths.append(atomic_write_bytes(Path(outdir) / f"{stem}.{ext}", buffer.getvalue()))
    plt.close(fig)
    return paths
