"""Learned non-query margins m_s against the input length s, per placement, for models trained to
a fit with soft targets (mean ± sd over the 8 seeds, raw weights), over the theory's closed form
(``theory.set_complement.formulas.readout_margins``) with the parameters fitted to each run's own
in-distribution margins (:mod:`resharpen.experiments.set_complement.fit_report`: none lambda/s,
attn_out beta g sqrt(d v/(s(v-s))), post with its fitted K and beta g; the curve drawn is the
mean over seeds of the per-seed curves). Left of the dashed line (L_train) the curve is fitted,
right of it predicted. pre and peri: trained margins only (no fitted closed form). The last panel
is the large-K post arm (``model.attn_out_scale`` = 70). Data: the sweeps
fit_placements_v32 and fit_post_large_k_v32 (quick profile: their v = 16 quick sweeps, stamped).
Claims shown: fit.none.two_over_s, fit.attn_out.closed_form_band, fit.post.approaches_attn_out.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

ARMS = (("none", "fit_placements_v32"), ("pre", "fit_placements_v32"),
        ("post", "fit_placements_v32"), ("attn_out", "fit_placements_v32"),
        ("peri", "fit_placements_v32"), ("post", "fit_post_large_k_v32"))


def _curve(reports: list[dict], key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s = np.array([r["length"] for r in reports[0]["per_length"]], dtype=float)
    values = np.array([[np.nan if r[key] is None else r[key] for r in rep["per_length"]]
                       for rep in reports], dtype=float)
    with warnings.catch_warnings():  # s = 1 has no non-query margin: an all-NaN column
        warnings.simplefilter("ignore", RuntimeWarning)
        return s, np.nanmean(values, axis=0), (np.nanstd(values, axis=0, ddof=1)
                                                if len(reports) > 1 else np.zeros(len(s)))


def make(profile: str, outdir: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    from resharpen.experiments.core.io import ensure_writable_dir
    from resharpen.experiments.set_complement.claims_fit import reports, sweep_root
    from resharpen.paper_figs import save

    roots = {name: sweep_root(name, profile) for _, name in ARMS}
    absent = [name for name, root in roots.items() if root is None]
    if absent:
        raise ValueError(f"no finished full sweep {absent[0]}; run `resharpen sweep "
                         f"experiments/configs/set_complement/{absent[0]}.toml --workers 2`")
    ensure_writable_dir(outdir)
    fig, axes = plt.subplots(2, 3, figsize=(12.0, 7.0), sharex=True)
    for ax, (placement, name) in zip(axes.ravel(), ARMS):
        group = [r for r in reports(roots[name]) if r["placement"] == placement
                 and r["fit_reached"]]
        if not group:
            ax.set_title(f"{placement}: no run reached the fit")
            continue
        s, mean, sd = _curve(group, "margin")
        line, = ax.plot(s, mean, "o", ms=3, label=f"trained (n={len(group)})")
        ax.fill_between(s, mean - sd, mean + sd, color=line.get_color(), alpha=0.2)
        if group[0]["theory_params"]:
            _, theory, _ = _curve(group, "theory_margin")
            ax.plot(s, theory, "k-", lw=1.0, label="closed form, fitted on s <= L_train")
        first = group[0]
        ax.axvline(first["train_len"], color="gray", lw=0.8, ls="--")
        large = " (large K, attn_out_scale %g)" % first["attn_out_scale"] \
            if first["attn_out_scale"] != 1.0 else ""
        ax.set(title=f"{placement}{large}", yscale="log", xlabel="input length s",
               ylabel="smallest non-query margin m_s")
        ax.legend(fontsize=7)
    v = first["vocab"]
    stamp = " — QUICK PROFILE (v = 16 quick sweeps)" if profile == "quick" else ""
    fig.suptitle(f"Learned margins at the fit, v = {v}, mean ± sd over seeds; dashed = L_train"
                 + stamp, color="red" if stamp else "black")
    fig.tight_layout()
    return save(fig, outdir, "fig_fit_margins")
