"""One script per figure, grouped by slice. Each module ``<slice>/fig_*.py`` defines
``make(profile, outdir) -> list[Path]`` (writing PNG and PDF with the Agg backend, in the one style
of :mod:`resharpen.paper_figs.style`) and names, in its docstring, the claims it shows.
`resharpen figs` runs them all. Figures never train: a figure whose results are missing raises
:class:`MissingResults` with the one command that makes them, and is skipped.

Nothing here lists the figures. :data:`FIGURES` is found from the files: every ``fig_*.py`` in
every slice folder (a folder of this one with an ``__init__.py``). :data:`OUTPUTS`, the stems of
the files each module writes (``<stem>.png`` and ``<stem>.pdf``), is read from each module's
source without importing it: its module-level literal ``STEMS = ("stem", ...)``, or, when it has
none, the one stem that is the module's own name. A stem holding ``{task}`` stands for one file
per task of the language grid (:data:`LANGUAGE_TASKS`): ``STEMS = ("fig_langtrain_{task}",)``.
:data:`DATA`, the commands that make the trained results a figure draws, is read the same way:
the module-level literal ``DATA = ("resharpen ... --profile {profile}", ...)`` of a figure drawn
from trained results; a figure without one computes its data when drawn.
A new figure is its script alone."""
from __future__ import annotations

if __name__ != "resharpen.paper_figs":  # one import name: not ``paper_figs`` from the checkout's root
    raise ImportError(f"import this folder as resharpen.paper_figs, not {__name__} "
                      "(pip install -e . installs it)")

import fnmatch
import importlib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from resharpen.experiments.common.package_files import figure_files as _figure_files  # noqa: E402
from resharpen.paper_figs import style  # noqa: E402 (after the backend is chosen)

style.apply()


def discover_figures(root: Path | None = None) -> dict[str, str]:
    """Every figure module and the slice it belongs to, found from the files: each
    ``<root>/<slice>/fig_*.py`` of a slice folder (``root`` defaults to this folder;
    :func:`resharpen.experiments.common.package_files.figure_files`)."""
    return {name: path.parent.name for name, path in _figure_files(root).items()}


def _literal_strings(path: Path, name: str, what: str) -> tuple[str, ...] | None:
    """The module-level literal ``<name> = ("...", ...)`` of the module at ``path``, read from
    its source without importing it; None when it has none. ValueError when it is not a
    non-empty literal tuple of non-empty strings (``what`` names them)."""
    import ast

    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                value = None
            if not (isinstance(value, tuple) and value
                    and all(isinstance(item, str) and item for item in value)):
                raise ValueError(f"{path}: {name} must be a literal tuple of {what}")
            return value
    return None


def declared_stems(path: Path, tasks: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The stems of the files the figure module at ``path`` writes, read from its source without
    importing it: its module-level literal ``STEMS = ("stem", ...)``, a stem holding ``{task}``
    repeated once per task of ``tasks`` (in their order); the module's own name when it has no
    ``STEMS``. ValueError when ``STEMS`` is not a literal tuple of strings."""
    path = Path(path)
    stems = _literal_strings(path, "STEMS", "file stems")
    if stems is None:
        return (path.stem,)
    return tuple(out for stem in stems for out in _per_task(stem, tasks))


def data_command(entry: str) -> str:
    """The command of a ``DATA`` entry, without its note (after `` # ``)."""
    return entry.split(" # ", 1)[0].strip()


def declared_data(path: Path) -> tuple[str, ...]:
    """The commands that make the trained results the figure module at ``path`` draws, read from
    its source without importing it: its module-level literal ``DATA = ("resharpen ...
    --profile {profile}", ...)``, each command the figure reads at the full size, one it can do
    without or reads only there followed by a note after `` # `` (``... # full size only``);
    () for a figure that computes its data when drawn (no ``DATA``). ValueError for a command
    that is not a ``resharpen`` command with a ``--profile {profile}`` placeholder."""
    path = Path(path)
    commands = _literal_strings(path, "DATA", "commands") or ()
    for entry in commands:
        command = data_command(entry)
        if not command.startswith("resharpen ") or "--profile {profile}" not in command:
            raise ValueError(f"{path}: DATA holds {entry!r}, not a resharpen command with "
                             "--profile {profile}")
    return commands


def _per_task(stem: str, tasks: tuple[str, ...]) -> tuple[str, ...]:
    """``stem`` with ``{task}`` replaced by each of ``tasks``; ``stem`` alone without it."""
    return tuple(stem.replace("{task}", task) for task in tasks) if "{task}" in stem else (stem,)


def _grid_tasks() -> tuple[str, ...]:
    """The tasks of the language grid file (its ``[search]`` ``task.name`` grid), read from the
    one place that lists them."""
    from resharpen.experiments.common.package_files import folder
    from resharpen.experiments.common.toml_files import read_toml

    grid = read_toml(folder("experiments") / "configs" / "languages" / "grid.toml", "grid file")
    return tuple(grid["search"]["task.name"]["grid"])


LANGUAGE_TASKS = _grid_tasks()
"""The tasks of the language grid (experiments/configs/languages/grid.toml): the values of a
``{task}`` placeholder in a figure module's ``STEMS``."""

FIGURES: dict[str, str] = discover_figures()
"""Every figure module and the slice it belongs to (``paper_figs/<slice>/<module>.py``), found
from the files by :func:`discover_figures`."""

OUTPUTS: dict[str, tuple[str, ...]] = {
    name: declared_stems(path, LANGUAGE_TASKS) for name, path in _figure_files().items()}
"""The stems of the files each figure module writes (``<stem>.png`` and ``<stem>.pdf``), read
from each module by :func:`declared_stems`."""


DATA: dict[str, tuple[str, ...]] = {
    name: declared_data(path) for name, path in _figure_files().items()}
"""The commands that make the trained results each figure module draws (``{profile}`` stands
for the profile; () for a figure that computes its data), read from each module by
:func:`declared_data`."""


class MissingResults(LookupError):
    """A figure's results are not on disk; ``command`` makes them (figures never train)."""

    def __init__(self, what: str, command: str):
        super().__init__(f"{what}; make them with: {command}")
        self.what, self.command = what, command


def figure_modules() -> list[str]:
    """The names of every figure module, sorted."""
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
    from resharpen.experiments.common.io import ensure_writable_dir
    from resharpen.experiments.common.progress import track

    names = select_figures(only)
    check_figure_files(outdir, [stem for name in names for stem in OUTPUTS[name]])
    ensure_writable_dir(outdir)
    written: list[Path] = []
    skipped: dict[str, str] = {}
    for name in track(names, desc="figs", unit="figure"):
        try:
            written.extend(figure_module(name).make(profile, outdir))
        except MissingResults as missing:
            skipped[name] = missing.command
            report(f"skipped {name}: {missing.what}; make them with: {missing.command}")
    return written, skipped


def figure_catalogue(names: list[str] | None = None) -> list[dict]:
    """One entry per figure module (all, or ``names``): its name, slice, output stems, the
    first sentence of its docstring, the claims that declare it (the claims' TOML files,
    ``figures = [...]``) and the commands that make its data (:data:`DATA`), read without
    drawing anything."""
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
                    "claims": shown.get(name, []), "data": list(DATA[name])})
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

    from resharpen.experiments.common.io import atomic_write_bytes
    from resharpen.experiments.common.json_text import dumps_json
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
