"""Initial velocity gamma'(0) of the six schemes against beta at an orthonormal start (n = 256).

Lines: Theorem 4.1's closed forms (derived in resharpen.theory.dynamics.speed); markers: gamma'(0) read off
the particle vector field (resharpen.experiments.dynamics.particles, n = d = 256). Pre-LN coincides with Post-LN at
r0 = 1, so the figure uses r0 = 2 and alpha0 = 1/4 to separate them; Post-LN, Mix-LN and
sqrt-scaling share gamma'(0) = 2/(e^beta + n - 1) by the table. Claims shown: dyn.gamma_dot0.*, dyn.gamma_dot0.simulated.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from resharpen.experiments.common.profiles import pick
from resharpen.experiments.dynamics import particles as P
from resharpen.paper_figs import save, style
from resharpen.theory.dynamics import speed as nd

N = 256
R0, ALPHA0 = 2.0, 0.25


def make(profile: str, outdir: Path) -> list[Path]:
    betas = np.linspace(0.25, 10, 60)
    marks = pick(profile, quick=np.array([0.5, 1, 2, 3, 5, 7, 10]), full=np.linspace(0.5, 10, 20))
    theta = P.orthonormal_start(N, N, seed=0)
    r0 = np.full(N, R0)
    fig, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 2.8))
    markers = dict(zip(nd.SCHEMES, "os^vDx"))
    styles = dict(zip(nd.SCHEMES, ["-", "-", "--", "-", "-", ":"]))
    for scheme in nd.SCHEMES:
        color = style.SCHEME_COLORS[scheme]
        exact = [nd.gamma_dot0_num(scheme, b, N, R0, ALPHA0) for b in betas]
        ax.semilogy(betas, exact, color=color, lw=2 if styles[scheme] == "-" else 2.5,
                    ls=styles[scheme], label=nd.SCHEME_LABELS[scheme])
        sim = [P.off_diagonal_mean(P.gamma_dot(theta, r0, 0.0,
                                                 P.Dynamics(scheme, float(b), alpha0=ALPHA0)))
               for b in marks]
        ax.semilogy(marks, sim, ls="none", marker=markers[scheme], color=color, mfc="none", ms=5)
    ax.set(xlabel=r"$\beta$", ylabel=r"$\dot\gamma(0)$")
    ax.set_title(rf"initial velocity, orthonormal start, $n={N}$, $r_0={R0:g}$, "
                 rf"$\alpha_0={ALPHA0:g}$ ({profile} profile)" "\nlines: Thm 4.1 closed form; "
                 "markers: particle vector field", fontsize=style.MIN_FONT)
    ax.tick_params(labelsize=style.MIN_FONT)
    keys = [style.key(nd.SCHEME_LABELS[scheme], color=style.SCHEME_COLORS[scheme],
                      ls=styles[scheme], lw=2 if styles[scheme] == "-" else 2.5,
                      marker=markers[scheme], mfc="none", ms=5) for scheme in nd.SCHEMES]
    fig.tight_layout()
    style.legend_below(ax, keys, ncol=2,
                       title="Post-LN, Mix-LN and sqrt-scaling coincide (dashed, dotted on top)",
                       title_fontsize=style.MIN_FONT)
    return save(fig, outdir, "fig_dyn_initial_velocity", profile)
