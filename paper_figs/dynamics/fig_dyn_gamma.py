"""gamma(t) under the symmetric start for the six schemes at beta = 5, n = 256 (the paper's ODE figure).

Panels: gamma(t); gamma'(t) on log-log axes (power laws are lines: slope -3 for Pre-, Mix-, Peri-LN
and nGPT with alpha_t = 1/(t+1)); gamma'(t) on semi-log axes (exponentials are lines: rate -2 for
Post-LN and nGPT with constant alpha). Claims shown: dyn.terminal.ode.*, dyn.terminal.linearized,
dyn.gamma_dot0.*, dyn.erratum.ngpt_constant_alpha.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from resharpen.experiments.common.profiles import pick
from resharpen.paper_figs import save, style
from resharpen.theory.dynamics import speed as nd
from resharpen.theory.dynamics import ode

BETA, N = 5.0, 256
CURVES = [(s, "const") for s in nd.SCHEMES] + [("ngpt", "inverse")]


def curves(horizon: float):
    t_eval = np.unique(np.concatenate([[0.0], np.geomspace(1e-2, horizon, 600)]))
    out = {}
    for scheme, schedule in CURVES:  # label -> (scheme, solution)
        label = nd.SCHEME_LABELS[scheme] + (r", $\alpha_t=1/(t+1)$" if schedule == "inverse" else
                                            (r", $\alpha\equiv 1$" if scheme == "ngpt" else ""))
        out[label] = scheme, ode.solve_symmetric(scheme, BETA, N, horizon, alpha_schedule=schedule,
                                                 t_eval=t_eval)
    return out


def make(profile: str, outdir: Path) -> list[Path]:
    horizon = pick(profile, quick=2000.0, full=20000.0)
    sols = curves(horizon)
    fig, axes = plt.subplots(1, 3, figsize=(style.TEXT_WIDTH, 2.6))
    styles = dict(zip(sols, ["-", "--", "-.", ":", "-", "--", (0, (5, 1, 1, 1))]))
    for label, (scheme, sol) in sols.items():
        ls, color = styles[label], style.SCHEME_COLORS[scheme]
        axes[0].semilogx(sol.t[1:], sol.gamma[1:], ls=ls, color=color, label=label)
        axes[1].loglog(sol.t[1:], sol.gamma_dot[1:], ls=ls, color=color)
        keep = sol.t <= 40
        axes[2].semilogy(sol.t[keep], sol.gamma_dot[keep], ls=ls, color=color)
    t = np.geomspace(50, horizon, 10)
    style.reference(axes[1], t, 3e3 * t**-3.0, lw=3, alpha=0.25, label=r"$\propto t^{-3}$")
    axes[1].set_ylim(1e-12, 1)
    axes[2].set_ylim(1e-16, 1)
    axes[0].set(xlabel="t (depth)", ylabel=r"$\gamma(t)=\langle\theta_j,\theta_k\rangle$",
                title=rf"symmetric start, $\beta={BETA:g}$, $n={N}$")
    axes[1].set(xlabel="t", ylabel=r"$\dot\gamma(t)$", title="log-log: power laws are lines")
    axes[2].set(xlabel="t", ylabel=r"$\dot\gamma(t)$", title="semi-log: exponentials are lines")
    for ax in axes:
        ax.title.set_size(style.MIN_FONT)
        ax.tick_params(labelsize=style.MIN_FONT)
    fig.suptitle(rf"Token-similarity ODE (theory; horizon t = {horizon:g}, {profile} profile)",
                 fontsize=style.MIN_FONT + 1)
    fig.tight_layout(w_pad=0.4)
    keys = axes[0].get_lines() + [line for line in axes[1].get_lines()
                                  if not line.get_label().startswith("_")]
    style.legend_below(fig, keys, ncol=3)
    return save(fig, outdir, "fig_dyn_gamma", profile)
