"""Learned non-query margins m_s against the input length s, per placement, for models trained to
a fit with soft targets (mean ± sd over the 8 seeds, raw weights), over the theory's closed form
(``theory.set_complement.formulas.readout_margins``) with the parameters fitted to each run's own
in-distribution margins (:mod:`resharpen.experiments.set_complement.fit_report`: none lambda/s,
attn_out beta g sqrt(d v/(s(v-s))), post with its fitted K and beta g; the curve drawn is the
mean over seeds of the per-seed curves). Left of the dashed line (L_train) the curve is fitted,
right of it predicted. pre and peri: trained margins only (no fitted closed form). The last column
is the large-K post arm (``model.attn_out_scale`` = 70).

One row per vocabulary: v = 32 (sweeps fit_placements_v32 and fit_post_large_k_v32; quick profile:
their v = 16 quick sweeps, stamped) and, in the full profile when out/sweeps/fit_placements_v64
exists, v = 64 (no large-K arm at v = 64). Never trains: a missing v = 32 sweep skips the figure
with the command that runs it. Claims shown: fit.none.two_over_s, fit.attn_out.closed_form_band,
fit.post.ood_falls_with_k (its graded sweep is fig_fit_post_k; the large-K column here is one
point of it).
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from resharpen.experiments.training.schema import FIRST_PLACEMENTS
from resharpen.paper_figs import MissingResults

DATA = (
    "resharpen sweep set_complement/fit_placements_v32 --profile {profile} --workers 2",
    "resharpen sweep set_complement/fit_post_large_k_v32 --profile {profile} --workers 2"
    " # optional: the large-K panel",
    "resharpen sweep set_complement/fit_placements_v64 --profile {profile} --workers 2"
    " # full size only, optional: the v = 64 row",)
"""The commands that make the trained results this figure draws (read without importing it:
paper_figs/__init__.py)."""

COLUMNS = tuple((placement, "") for placement in FIRST_PLACEMENTS) + (("post", "large_k"),)
ROWS = {32: {"": "fit_placements_v32", "large_k": "fit_post_large_k_v32"},
        64: {"": "fit_placements_v64"}}
"""Per vocabulary, the sweep of each arm kind ('' = the placements sweep)."""


def _curve(reports: list[dict], key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s = np.array([r["length"] for r in reports[0]["per_length"]], dtype=float)
    values = np.array([[np.nan if r[key] is None else r[key] for r in rep["per_length"]]
                       for rep in reports], dtype=float)
    with warnings.catch_warnings():  # s = 1 has no non-query margin: an all-NaN column
        warnings.simplefilter("ignore", RuntimeWarning)
        return s, np.nanmean(values, axis=0), (np.nanstd(values, axis=0, ddof=1)
                                                if len(reports) > 1 else np.zeros(len(s)))


def rows(profile: str) -> dict[int, dict[str, Path]]:
    """{v: {arm kind: finished sweep folder}}: v = 32 always (MissingResults when its placements
    sweep is absent; the large-K panel is left out, with a note, when only that sweep is), v = 64
    in the full profile when its sweep is on disk."""
    from resharpen.paper_figs.results import set_complement_sweep

    def present(vocab: int) -> dict[str, Path]:
        out = {}
        for kind, name in ROWS[vocab].items():
            try:
                out[kind] = set_complement_sweep(name, profile)
            except MissingResults as missing:
                if not kind:  # the placements sweep decides whether the row is drawn
                    raise
                print(f"fig_fit_margins: no v = {vocab} {kind} panel: {missing}")
        return out

    found = {32: present(32)}
    if profile == "full":
        try:
            found[64] = present(64)
        except MissingResults:
            pass
    return found


PANEL_COLUMNS = 3
"""Panels per row: a vocabulary's six panels take two rows of three at text width."""


def _panel(ax, group: list[dict], placement: str, placement_colour) -> None:
    from resharpen.paper_figs import style

    s, mean, sd = _curve(group, "margin")
    ax.plot(s, mean, "o", ms=3, color=placement_colour, label=f"trained (n={len(group)})")
    ax.fill_between(s, mean - sd, mean + sd, color=placement_colour, alpha=0.2)
    if group[0]["theory_params"]:
        _, theory, _ = _curve(group, "theory_margin")
        style.reference(ax, s, theory, label="closed form, fitted on s <= L_train")
    style.vline(ax, group[0]["train_len"], color=style.MUTED)
    ax.tick_params(labelsize=style.MIN_FONT)


def _legend_keys(seeds: set[int]) -> list:
    """The one legend of the figure: what every panel draws (a panel's colour is its placement)."""
    from resharpen.paper_figs import style

    n = "/".join(str(k) for k in sorted(seeds)) or "0"
    return [style.key(f"trained: mean over the seeds that reached the fit (n = {n}), "
                      "in the placement's colour", marker="o", ls="none", ms=3,
                      color=style.MUTED),
            style.key("band: ± sample sd over those seeds", lw=6, alpha=0.3, color=style.MUTED),
            style.key("closed form, fitted on s <= L_train (mean of the per-seed curves; "
                      "none, post, attn_out only)"),
            style.key("L_train: fitted left of it, predicted right of it", ls="--", lw=0.8,
                      color=style.MUTED)]


def make(profile: str, outdir: Path) -> list[Path]:
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    from resharpen.experiments.common.io import ensure_writable_dir
    from resharpen.experiments.set_complement.fit_report import sweep_reports
    from resharpen.paper_figs import save, style

    found = rows(profile)
    ensure_writable_dir(outdir)
    per_vocab = -(-len(COLUMNS) // PANEL_COLUMNS)  # rows of panels per vocabulary
    fig, grid = plt.subplots(per_vocab * len(found), PANEL_COLUMNS,
                             figsize=(style.TEXT_WIDTH, 2.1 * per_vocab * len(found)),
                             squeeze=False)
    flat = grid.ravel()  # row-major: the panels of a vocabulary, in the order of COLUMNS
    reports = {root: sweep_reports(root, "raw") for roots in found.values() for root in roots.values()}
    seeds: set[int] = set()
    for index, (vocab, roots) in enumerate(found.items()):
        row = flat[index * per_vocab * PANEL_COLUMNS:(index + 1) * per_vocab * PANEL_COLUMNS]
        for ax in row[len(COLUMNS):]:
            ax.set_visible(False)
        for number, (ax, (placement, kind)) in enumerate(zip(row, COLUMNS)):
            if kind not in roots:
                ax.set_visible(False)
                continue
            group = [r for r in reports[roots[kind]] if r["placement"] == placement
                     and r["fit_reached"]]
            if not group:
                ax.set_title(f"{placement}: no run reached the fit", fontsize=style.MIN_FONT)
                continue
            seeds.add(len(group))
            _panel(ax, group, placement, style.placement_color(placement))
            large = (f", large K\n(attn_out_scale {group[0]['attn_out_scale']:g})"
                     if group[0]["attn_out_scale"] != 1.0 else "")
            ax.set(yscale="log")
            ax.yaxis.set_major_formatter(ticker.LogFormatter())  # 4, 6 rather than 4 x 10^0
            ax.yaxis.set_minor_formatter(ticker.LogFormatter(minor_thresholds=(2, 0.5)))
            ax.set_title(f"v = {group[0]['vocab']}: {placement}{large}", fontsize=style.MIN_FONT)
            if number // PANEL_COLUMNS == per_vocab - 1 or number + PANEL_COLUMNS >= len(COLUMNS):
                ax.set_xlabel("input length s")
            if number % PANEL_COLUMNS == 0:
                ax.set_ylabel("smallest non-query\nmargin m_s")
    fig.suptitle(f"Learned margins at the fit, {profile} profile (raw weights), over the fitted "
                 "closed form", fontsize=style.MIN_FONT + 1)
    fig.tight_layout(h_pad=0.6, w_pad=0.4)
    style.legend_below(fig, _legend_keys(seeds))
    return save(fig, outdir, "fig_fit_margins", profile)
