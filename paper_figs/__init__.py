"""One script per figure, grouped by slice. Each module ``<slice>/fig_*.py`` defines
``make(profile, outdir) -> list[Path]`` (writing PNG and PDF with the Agg backend, in the one style
of :mod:`resharpen.paper_figs.style`) and names, in its docstring, the claims it shows.
`resharpen figs` runs them all. Figures never train: a figure whose results are missing raises
:class:`MissingResults` with the one command that makes them, and is skipped."""
from __future__ import annotations

if __name__ != "resharpen.paper_figs":  # one import name: not ``paper_figs`` from the checkout's root
    raise ImportError(f"import this folder as resharpen.paper_figs, not {__name__} "
                      "(pip install -e . installs it)")

import fnmatch
import importlib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from resharpen.paper_figs import style  # noqa: E402 (after the backend is chosen)

style.apply()


FIGURES: dict[str, str] = {
    "fig_collapse_deaveraging": "collapse",
    "fig_collapse_gradients": "collapse",
    "fig_collapse_similarity": "collapse",
    "fig_collapse_training": "collapse",
    "fig_collapse_trained": "collapse",
    "fig_dyn_gamma": "dynamics",
    "fig_dyn_initial_velocity": "dynamics",
    "fig_dyn_mc_ratio": "dynamics",
    "fig_dyn_random_stacks": "dynamics",
    "fig_dyn_trained": "dynamics",
    "fig_fit_margins": "set_complement",
    "fig_fit_post_k": "set_complement",
    "fig_fit_ood_vs_fit": "set_complement",
    "fig_langtrain_curves": "languages",
    "fig_langtrain_noise_gain": "languages",
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


def _grid_tasks() -> tuple[str, ...]:
    """The tasks of the language grid file (its ``[search]`` ``task.name`` grid), read from the
    one place that lists them."""
    from resharpen.experiments.common.package_files import folder
    from resharpen.experiments.common.toml_files import read_toml

    grid = read_toml(folder("experiments") / "configs" / "languages" / "grid.toml", "grid file")
    return tuple(grid["search"]["task.name"]["grid"])


LANGUAGE_TASKS = _grid_tasks()
"""The tasks of the language grid (experiments/configs/languages/grid.toml), one figure each."""

OUTPUTS: dict[str, tuple[str, ...]] = {
    "fig_collapse_deaveraging": ("fig_collapse_deaveraging",),
    "fig_collapse_gradients": ("fig_collapse_gradients",),
    "fig_collapse_similarity": ("fig_collapse_similarity",),
    "fig_collapse_training": ("fig_collapse_training",),
    "fig_collapse_trained": ("fig_collapse_trained",),
    "fig_dyn_gamma": ("fig_dyn_gamma",),
    "fig_dyn_initial_velocity": ("fig_dyn_initial_velocity",),
    "fig_dyn_mc_ratio": ("fig_dyn_mc_ratio",),
    "fig_dyn_random_stacks": ("fig_dyn_random_stacks",),
    "fig_dyn_trained": ("fig_dyn_trained",),
    "fig_fit_margins": ("fig_fit_margins",),
    "fig_fit_post_k": ("fig_fit_post_k",),
    "fig_fit_ood_vs_fit": ("fig_fit_ood_vs_fit",),
    "fig_langtrain_curves": tuple(f"fig_langtrain_{task}" for task in LANGUAGE_TASKS),
    "fig_langtrain_noise_gain": ("fig_langtrain_noise_gain",),
    "fig_langtrain_othello_study": ("fig_langtrain_study_othello",),
    "fig_sc_attn_out_sv": ("sc_attn_out_over_sv",),
    "fig_sc_invalid_mass": ("sc_invalid_mass",),
    "fig_sc_margins": ("sc_margins",),
    "fig_train_averaging": ("fig_train_averaging",),
    "fig_train_dropout": ("fig_train_dropout",),
    "fig_train_grids": ("fig_train_grid_placements", "fig_train_grid_margins",
                        "fig_train_multi_layer_placements", "fig_train_multi_layer_margins"),
    "fig_train_long_runs": ("fig_train_long_runs_averaging", "fig_train_long_runs_placements",
                            "fig_train_long_runs_v32_averaging",
                            "fig_train_long_runs_v32_placements"),
    "fig_train_margins": ("fig_train_margins",),
    "fig_train_placements": ("fig_train_placements",),
}
"""The stems of the files each figure module writes (``<stem>.png`` and ``<stem>.pdf``)."""


class MissingResults(LookupError):
    """A figure's results are not on disk; ``command`` makes them (figures never train)."""

    def __init__(self, what: str, command: str):
        super().__init__(f"{what}; make them with: {command}")
        self.what, self.command = what, command


def figure_modules() -> list[str]:
    return sorted(FIGURES)


def figure_module(name: str):
    """The module ``resharpen.paper_figs.<slice>.<name>`` (imported on demand: figures are heavy)."""
    return importlib.import_module(f"resharpen.paper_figs.{FIGURES[name]}.{name}")


def select_figures(only: list[str] | None = None) -> list[str]:
    """The figure modules matching any glob in ``only`` (all when None or empty). A glob matches
    a module when it matches one of its output stems (``sc_margins``, ``fig_langtrain_dyck2``)
    or its module name (``fig_sc_margins``). ValueError for a glob that matches no figure (a
    typo must not silently draw fewer figures), naming the closest stem or module name and the
    stems."""
    from resharpen.experiments.common.cli_args import did_you_mean

    names = figure_modules()
    if not only:
        return names

    def matches(name: str, pattern: str) -> bool:
        return fnmatch.fnmatchcase(name, pattern) or any(fnmatch.fnmatchcase(stem, pattern)
                                                         for stem in OUTPUTS[name])

    stems = sorted(stem for n in names for stem in OUTPUTS[n])
    for pattern in only:
        if not any(matches(n, pattern) for n in names):
            hint = did_you_mean(pattern, stems + names)
            raise ValueError(f"no figure matches {pattern!r}{hint}; figures (output stems) are "
                             f"{', '.join(stems)}")
    return [n for n in names if any(matches(n, p) for p in only)]


def run_figures(profile: str, outdir: Path, only: list[str] | None = None,
                report=print) -> tuple[list[Path], dict[str, str]]:
    """Draw the selected figures into ``outdir``: (files written, {skipped module: the command
    that makes its results}). A skipped figure is reported with ``report`` as it happens."""
    from tqdm import tqdm

    from resharpen.experiments.common.io import ensure_writable_dir

    names = select_figures(only)
    check_figure_files(outdir, [stem for name in names for stem in OUTPUTS[name]])
    ensure_writable_dir(outdir)
    written: list[Path] = []
    skipped: dict[str, str] = {}
    for name in tqdm(names, desc="figs", unit="fig", disable=None):
        try:
            written.extend(figure_module(name).make(profile, outdir))
        except MissingResults as missing:
            skipped[name] = missing.command
            report(f"skipped {name}: {missing.what}; make them with: {missing.command}")
    return written, skipped


def figure_catalogue(names: list[str] | None = None) -> list[dict]:
    """One entry per figure module (all, or ``names``): its name, slice, output stems, the
    first sentence of its docstring and the claims that declare it (the claims' TOML files,
    ``figures = [...]``), read without drawing anything."""
    import ast

    from resharpen.experiments.common.package_files import folder
    from resharpen.experiments.ledger.declarations import all_declarations

    shown: dict[str, list[str]] = {}
    for claim_id, entry in all_declarations().items():
        for figure in entry.get("figures", []):
            shown.setdefault(figure, []).append(claim_id)
    out = []
    for name in names or figure_modules():
        source = (folder("paper_figs") / FIGURES[name] / f"{name}.py").read_text()
        doc = " ".join((ast.get_docstring(ast.parse(source)) or "").split())
        out.append({"name": name, "slice": FIGURES[name], "stems": list(OUTPUTS[name]),
                    "about": doc.split(". ")[0].rstrip(".") + "." if doc else "",
                    "claims": shown.get(name, [])})
    return out


def run_all(profile: str, outdir: Path, only: list[str] | None = None) -> list[Path]:
    """The files of :func:`run_figures` (skipped figures reported on stderr)."""
    import sys

    return run_figures(profile, outdir, only,
                       report=lambda line: print(line, file=sys.stderr))[0]


PROVENANCE_KEY = {"png": "resharpen:provenance", "pdf": "Subject"}
"""Where a figure file carries its provenance (JSON): the PNG's text chunk of this key, the PDF's
Subject entry (:func:`resharpen.experiments.common.provenance.provenance`: commit, dirty flag,
versions, machine, profile, time)."""


def check_figure_files(outdir: Path, stems) -> None:
    """UsageError unless ``outdir`` is absent or a folder and the PNG and PDF file of each of
    ``stems`` in it (what :func:`save` writes) is absent or a regular file: called before the
    first figure is drawn, so a FIFO, a device, a folder or a link at an output is refused
    before the work."""
    from resharpen.experiments.common.io import check_folder_files

    check_folder_files(outdir, [f"{stem}.{ext}" for stem in stems for ext in PROVENANCE_KEY],
                       "figures folder")


def save(fig, outdir: Path, stem: str, profile: str | None = None) -> list[Path]:
    """Save ``fig`` as ``stem.png`` and ``stem.pdf`` in ``outdir`` (atomically) and close it;
    ``profile="quick"`` stamps it as drawn from quick-profile data. Each file carries its
    provenance in its own metadata (:data:`PROVENANCE_KEY`)."""
    import io

    import matplotlib.pyplot as plt

    from resharpen.experiments.common.io import atomic_write_bytes, dumps_json
    from resharpen.experiments.common.provenance import provenance

    style.stamp(fig, profile)
    record = dumps_json(provenance(profile), indent=None, sort_keys=True)
    paths = []
    for ext in ("png", "pdf"):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=ext, dpi=150, bbox_inches="tight",
                    metadata={PROVENANCE_KEY[ext]: record})
        paths.append(atomic_write_bytes(Path(outdir) / f"{stem}.{ext}", buffer.getvalue()))
    plt.close(fig)
    return paths
