"""Per task: invalid mass, KL(p* || p) and top-1 invalid rate vs prefix length, per norm
placement and raw / EMA / BEMA weights.
Claims shown: langtrain.ema.ood_invalid_mass, langtrain.postnorm.vs_nofinal.ood_invalid_mass,
langtrain.postnorm.vs_pre.ood_invalid_mass.

One figure per task of the task-training grid (``fig_langtrain_<task>.png/.pdf``), as small
multiples: a row per metric (mean invalid mass and mean KL against the uniform-over-legal target,
log scale; the fraction of sequences whose top-1 token is illegal, linear), a column per norm
placement (its colour), and in each panel three lines, raw / EMA / BEMA weights (line style),
each the mean over seeds, with a band from the smallest to the largest seed (raw weights); the
dashed vertical line is L_train. The x-axis is the prefix length, the move index for Othello.

Reads out/sweeps/langs (full profile: `resharpen langs run --profile full`), else the archive's
copy (results/full/sweeps/langs), whose curve table holds exactly the statistics drawn
(:mod:`resharpen.experiments.languages.curves`: the runs' per-length records are not archived);
in the quick profile out/sweeps/langs-quick when complete (`resharpen langs run --profile
quick`, about 1 min on 2 cores), else the tiny grid the claims train (out/sweeps/langs-tiny).
At full size, while the grid is not finished, each task's figure draws the placements whose
runs on that task have all finished (:func:`resharpen.paper_figs.results.finished_placements`)
and says so in its title: whole groups only, never a placement with seeds missing. Never trains: with
none of them on disk the figure is skipped with the command.
"""
from __future__ import annotations

from pathlib import Path

STEMS = ("fig_langtrain_{task}",)
"""The files this figure writes, one per task of the language grid (``{task}``: read without
importing the module, paper_figs/__init__.py)."""
DATA = ("resharpen langs run --profile {profile}",)
"""The commands that make the trained results this figure draws (read without importing it:
paper_figs/__init__.py)."""

METRICS = (("invalid_mass", "invalid mass p(V \\ N(prefix))", True),
           ("kl", "KL(p* || p)", True), ("top1_invalid", "top-1 invalid rate", False))


SHARED_X_LABEL_FROM = 6
"""From this many placement columns on, the columns are too narrow for an x label each: the
figure has one, centred under them all."""


def x_label(task: str) -> str:
    return "move index (moves played)" if task in ("othello", "othello6") else "prefix length n"


def seeds(counts: set) -> str:
    """The number of seeds behind the lines of one weight set: ``5``, or ``3 to 5`` when the
    placements differ."""
    return str(min(counts)) if len(counts) == 1 else f"{min(counts)} to {max(counts)}"


def task_figure(task: str, lines: dict, grid: str, profile: str | None = None,
                part: str = ""):
    """The small multiples of one task: rows = metrics, columns = placements. ``lines``:
    {(norm, weights): line} of :func:`resharpen.experiments.languages.curves.figure_lines`."""
    import matplotlib.pyplot as plt

    from resharpen.paper_figs import style

    norms = sorted({norm for norm, _ in lines}, key=list(style.PLACEMENT_COLORS).index)
    train_len = next(iter(lines.values()))["train_len"]
    fig, axes = plt.subplots(len(METRICS), len(norms),
                             figsize=(min(style.TEXT_WIDTH, 2.4 * len(norms) + 0.6), 5.6),
                             sharex=True, sharey="row", squeeze=False)
    for col, norm in enumerate(norms):
        colour = style.placement_color(norm)
        for weights, ls in style.WEIGHT_STYLES.items():
            slot = lines.get((norm, weights))
            if slot is None:
                continue
            for row, (metric, _, _) in enumerate(METRICS):
                ax = axes[row, col]
                ax.plot(slot["length"], slot["mean"][metric], ls=ls, color=colour,
                        label=f"{weights} (n={slot['n']})")
                if "lo" in slot:  # the band: smallest to largest seed
                    ax.fill_between(slot["length"], slot["lo"][metric], slot["hi"][metric],
                                    color=colour, alpha=0.15, lw=0)
        axes[0, col].set_title(norm, fontsize=style.MIN_FONT + 1)
        if len(norms) < SHARED_X_LABEL_FROM:
            axes[-1, col].set_xlabel(x_label(task))
    if len(norms) >= SHARED_X_LABEL_FROM:  # narrow columns: one label under them all
        fig.supxlabel(x_label(task), fontsize=plt.rcParams["axes.labelsize"])
    for row, (_, label, log) in enumerate(METRICS):
        axes[row, 0].set_ylabel(label)
        for ax in axes[row]:
            style.vline(ax, train_len)
            if log:
                ax.set_yscale("log")
    for ax in axes.ravel():
        ax.tick_params(labelsize=style.MIN_FONT)
    counts: dict = {}
    for (_, weights), slot in lines.items():
        counts.setdefault(weights, set()).add(slot["n"])
    keys = [style.key(f"{weights} weights: mean over seeds (n = {seeds(counts[weights])})", ls=ls)
            for weights, ls in style.WEIGHT_STYLES.items() if weights in counts]
    keys += [style.key("band: min to max over seeds (raw weights)", lw=6, alpha=0.3,
                       color=style.MUTED),
             style.key(f"L_train = {train_len} (dashed vertical); colour = placement", ls="--", lw=0.8)]
    fig.suptitle(f"{task} (grid {grid}" + (f", {profile} profile" if profile else "") + ")"
                 + (f"\n{part}" if part else ""), fontsize=style.MIN_FONT + 1)
    fig.tight_layout()
    style.legend_below(fig, keys, ncol=2)
    return fig


def grid_lines(root: Path, groups: set | None = None) -> dict:
    """{task: {(norm, weights): line}}, the curves of the grid folder ``root`` (only the
    (task, placement) ``groups``, when given): from its runs' per-length records or, for runs
    without them (archived), from its curve table
    (:func:`resharpen.experiments.languages.curves.grid_table`);
    :class:`~resharpen.paper_figs.MissingResults` when some runs have neither."""
    from resharpen.experiments.languages.curves import TABLE_FILE, figure_lines, grid_table
    from resharpen.paper_figs import MissingResults

    entries, uncovered = grid_table(root)
    if groups is not None:
        entries = [e for e in entries if (e["task"], e["norm"]) in groups]
        uncovered = [u for u in uncovered if tuple(u.split("/")) in groups]
    if uncovered:
        raise MissingResults(
            f"the runs of {', '.join(uncovered)} in {root} have no per-length records (restored "
            f"from the archive) and its {TABLE_FILE} does not cover them",
            f"resharpen archive pack out/sweeps/{Path(root).name}, in the checkout whose run "
            "folders hold the records")
    return figure_lines(entries)


def figures_of(root: Path, outdir: Path, prefix: str = "fig_langtrain_",
               profile: str | None = None, groups: set | None = None,
               part: str = "") -> list[Path]:
    """Write one figure per task of the grid folder ``root`` into ``outdir`` as
    ``<prefix><task>.png/.pdf`` (stamped when the grid is a quick or tiny one); ``groups``:
    only those (task, placement) groups, named in each title after ``part``."""
    from resharpen.experiments.common.io import ensure_writable_dir
    from resharpen.paper_figs import check_figure_files, save

    curves = grid_lines(root, groups)
    check_figure_files(outdir, [f"{prefix}{task}" for task in curves])  # before any figure
    ensure_writable_dir(outdir)
    quick = profile == "quick" or Path(root).name.endswith(("-quick", "-tiny"))
    written: list[Path] = []
    for task, lines in sorted(curves.items()):
        shown = "" if groups is None else (
            f"{part}\nshown: the placements whose runs on this task have all finished, "
            + ", ".join(sorted(norm for t, norm in groups if t == task)))
        fig = task_figure(task, lines, Path(root).name, "quick" if quick else profile, shown)
        written.extend(save(fig, outdir, f"{prefix}{task}", "quick" if quick else profile))
    return written


def make(profile: str, outdir: Path) -> list[Path]:
    """The best finished grid for the profile (:func:`resharpen.paper_figs.results.language_grid`);
    at full size, while it is not finished, its placements whose runs have all finished."""
    from resharpen.paper_figs import MissingResults
    from resharpen.paper_figs.results import finished_placements, language_grid

    try:
        return figures_of(language_grid(profile), Path(outdir), profile=profile)
    except MissingResults:
        if profile != "full":
            raise
    root, groups, finished, planned = finished_placements(profile)
    part = f"{finished} of the grid's {planned} runs finished"
    return figures_of(root, Path(outdir), profile=profile, groups=groups, part=part)
