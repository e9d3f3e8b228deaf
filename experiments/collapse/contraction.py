"""The collapsed gradient flows of ``collapse.contraction_bound`` (:mod:`.claims`): the flows
through collapsed states, where the per-layer contraction bound is violated, and how tight (or
vacuous) the product bound is.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from resharpen.experiments.collapse import backward as back
from resharpen.experiments.collapse.stack_checks import one_thread
from resharpen.experiments.common.profiles import pick

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""


COLLAPSED_STATES = ((1.0, None), (4.0, None), (4.0, "swiglu"))


@lru_cache(maxsize=None)
def collapsed_flows(profile: str) -> dict[str, dict]:
    """:func:`back.gradient_flow` with the independent gain, for every state of
    ``COLLAPSED_STATES``, labelled "x<k>" or "x<k>+swiglu"."""
    size = pick(profile, quick=dict(n=32, d=32, depth=12), full=dict(n=64, d=64, depth=48))
    with one_thread():
        return {f"x{k:g}{'+' + mlp if mlp else ''}":
                back.gradient_flow("post", multiplier=k, mlp=mlp, independent_gain=True, **size)
                for k, mlp in COLLAPSED_STATES}


def bound_violations(r: dict) -> tuple[float, float]:
    """(worst per-sublayer, product) relative violation of Theorem 3.6's bound with the
    independent factors c_k: max ||g_k|| / (c_k ||g_{k+1}||) - 1 and ratio / prod c_k - 1."""
    following = np.append(r["grad_x"][1:], r["grad_out"])
    per_sublayer = float(np.max(r["grad_x"] / (r["factor_bound"] * following))) - 1.0
    product = float(r["grad_x"][0] / r["grad_out"] / np.prod(r["factor_bound"])) - 1.0
    return per_sublayer, product


def tightness(r: dict) -> tuple[float, float, bool]:
    """(prod c_k, tightness = prod c_k / measured ratio ||dL/dX_1|| / ||dL/dX_L||, vacuous) of a
    collapsed stack's gradient flow: the bound is vacuous when prod c_k >= 1 (it allows the
    gradient to grow, so it says nothing about vanishing gradients)."""
    bound = float(np.prod(r["factor_bound"]))
    ratio = float(r["grad_x"][0] / r["grad_out"])
    return bound, bound / ratio, bound >= 1.0


def bound_outcome(profile: str):
    """The Outcome of ``collapse.contraction_bound``."""
    from resharpen.experiments.ledger import Outcome
    worst, parts, error, tight = -np.inf, [], 0.0, []
    for label, r in collapsed_flows(profile).items():
        per_sublayer, product = bound_violations(r)
        worst = max(worst, per_sublayer, product)
        error = max(error, r["sublayer_error"])
        bound, ratio_tight, vacuous = tightness(r)
        ratio = r["grad_x"][0] / r["grad_out"]
        tight.append((label, ratio_tight, vacuous))
        parts.append(f"{label}: ratio {ratio:.3g} vs prod c {bound:.3g}, tightness "
                     f"{ratio_tight:.3g}{' (vacuous: prod c >= 1)' if vacuous else ''} "
                     f"(measured-gain product {np.prod(r['factor']):.3g}), "
                     f"{int(r['iterations'].max())} Lanczos products")
    finite = all(np.isfinite(t) for _, t, _ in tight)
    low = min(t for _, t, _ in tight)
    return Outcome(measured=f"max violation {worst:.2g}; tightness "
                            + ", ".join(f"{label} {t:.3g}{' vacuous' if v else ''}"
                                        for label, t, v in tight),
                   expected="violation <= 1e-9 (tightness >= 1)",
                   passed=bool(worst <= 1e-9 and error <= 1e-12 and finite
                               and low >= 1.0 / (1.0 + 1e-9)),
                   detail="; ".join(parts) + f"; sublayer re-evaluation error {error:.1g}; "
                          f"{sum(v for _, _, v in tight)} of {len(tight)} bounds vacuous "
                          "(prod c >= 1: the bound allows the gradient to grow). The "
                          "measured-gain product (Definition 3.5's a_k) is the bound made tight by "
                          "construction; prod c uses the independent gain")


# ----------------------------------------------------------------- collapse.contraction_near_collapse
NEAR_TOLERANCE = 0.05
"""Largest relative gap |measured - c| / c of ``collapse.contraction_near_collapse``, fixed before
measuring (its TOML entry gives the reason)."""
PREMISE_T_SIM = 0.99
"""The block input's mean pairwise cosine from which collapse counts as holding approximately."""
NEAR_EPSILONS = (0.0, 0.01, 0.03, 0.08, 0.15, 0.3, 1.0)
"""The perturbation ladder: each row of the collapsed block input moves by eps times its norm
(t_sim(X) ~ 1/(1 + eps^2)); eps = 0 is exact collapse, where the gap is 0 by the chain rule."""


def theorem_gain(a: float, y_rows: np.ndarray, d: int) -> float:
    """Theorem 3.6's gain c = a sqrt d / ||y||, with ||y|| read near collapse as the
    root-mean-square row norm of the norm's input (at exact collapse every row has that norm)."""
    return float(a * np.sqrt(d) / np.sqrt(np.mean(np.asarray(y_rows, dtype=float) ** 2)))


def near_collapse_rows(n: int = 32, d: int = 32, depth: int = 4, multiplier: float = 1.0,
                       mlp: str | None = None, seed: int = 0,
                       betas: tuple[float, ...] = (0.0, 2.0, 9.0), layers: tuple[int, ...] = (0, 3),
                       epsilons: tuple[float, ...] = NEAR_EPSILONS) -> list[dict]:
    """Theorem 3.6 where collapse holds only approximately, one row per (layer, sublayer, beta,
    eps): the collapsed input X_k of each Post-Norm sublayer of the stack of
    :func:`back.contraction_condition` (same f_beta: beta amplifies the collapsed direction) with
    its rows moved to x + eps |x| z_i (z_i iid N(0, I/d), one draw per block scaled by eps).

    Each row has ``t_sim`` (of the perturbed X), ``t_sim_y`` (of the norm's input Y), ``y_rows``
    (the rows' norms), ``a`` (:func:`back.sublayer_gain` of X -> X + f_beta(X): the theorem's
    side), ``gain`` (:func:`back.jacobian_norm` of the whole block X -> N_out(X + f_beta(X)) through
    the model's norm module: the largest factor the block multiplies any gradient by, no formula)
    and ``real_gain`` (||J^T g|| / ||g|| for g the gradient of a fixed smooth loss of the block's
    output, by autograd)."""
    import torch

    from resharpen.experiments.collapse.stack import t_sim_torch
    gen = torch.Generator().manual_seed(seed + 13)
    readout = torch.randn(d, d, generator=gen, dtype=torch.float64)
    rows = []
    for i, s, x0, maps in back.collapsed_post_blocks(n, d, depth, multiplier, mlp, seed, betas,
                                                     layers):
        z = torch.randn(x0.shape, generator=gen, dtype=x0.dtype) / np.sqrt(d)
        for beta, amplified, whole in maps:
            for eps in epsilons:
                x = x0 + eps * x0.norm(dim=-1, keepdim=True) * z
                with torch.no_grad():
                    y = amplified(x)
                a, _ = back.sublayer_gain(amplified, x, seed=seed + 2 * i)
                gain, _ = back.jacobian_norm(whole, x, seed=seed + 2 * i + 1)
                xg = x.clone().requires_grad_(True)
                out = whole(xg)
                upstream = torch.autograd.grad(torch.tanh(out @ readout).pow(2).sum(), out,
                                               retain_graph=True)[0]
                (back_g,) = torch.autograd.grad(out, xg, upstream)
                rows.append({"layer": i, "sublayer": s, "beta": beta, "eps": eps,
                             "t_sim": float(t_sim_torch(x[0])), "t_sim_y": float(t_sim_torch(y[0])),
                             "y_rows": y[0].norm(dim=-1).numpy(), "a": a, "gain": gain,
                             "real_gain": float(back_g.norm() / upstream.norm())})
    return rows


NEAR_STATES = COLLAPSED_STATES


@lru_cache(maxsize=None)
def near_collapse_data(profile: str) -> tuple[dict, ...]:
    """:func:`near_collapse_rows` over the states of ``NEAR_STATES`` (quick: n = d = 32, layers 0
    and 3 of 4; full: n = d = 64, layers 0 and 7 of 8), each row labelled
    with its ``state``."""
    size = pick(profile, quick=dict(n=32, d=32, depth=4, layers=(0, 3), seeds=(0,)),
                full=dict(n=64, d=64, depth=8, layers=(0, 7), seeds=(0,)))
    seeds = size.pop("seeds")
    rows = []
    with one_thread():
        for k, mlp in NEAR_STATES:
            for seed in seeds:
                for r in near_collapse_rows(multiplier=k, mlp=mlp, seed=seed, **size):
                    rows.append({**r, "state": f"x{k:g}{'+' + mlp if mlp else ''}", "seed": seed,
                                 "d": size["d"]})
    return tuple(rows)


def judge_near_collapse(rows, gain_formula=None) -> dict:
    """Each row with its predicted ``c`` (``gain_formula``, default :func:`theorem_gain`),
    relative ``gap`` and whether it ``qualifies`` (eps > 0 and t_sim >= PREMISE_T_SIM); the
    ladder (per eps: rows, qualifying, min t_sim, max gap, classification errors) and the
    verdict: ``passed`` (every qualifying row within NEAR_TOLERANCE and classified right),
    ``decided`` (some row qualifies)."""
    formula = gain_formula or theorem_gain
    judged = []
    for r in rows:
        c = formula(r["a"], r["y_rows"], r["d"])
        judged.append({**r, "c": c, "gap": abs(r["gain"] - c) / c,
                       "wrong": (c < 1.0) != (r["gain"] < 1.0),
                       "qualifies": r["eps"] > 0 and r["t_sim"] >= PREMISE_T_SIM})
    ladder = {}
    for eps in sorted({r["eps"] for r in judged}):
        at = [r for r in judged if r["eps"] == eps]
        ladder[eps] = {"rows": len(at), "qualifying": sum(r["qualifies"] for r in at),
                       "t_min": min(r["t_sim"] for r in at), "t_max": max(r["t_sim"] for r in at),
                       "gap": max(r["gap"] for r in at), "wrong": sum(r["wrong"] for r in at),
                       "real_over_gain": max(r["real_gain"] / r["gain"] for r in at)}
    good = [r for r in judged if r["qualifies"]]
    passed = bool(good) and all(r["gap"] <= NEAR_TOLERANCE and not r["wrong"] for r in good)
    return {"rows": judged, "ladder": ladder, "qualifying": good, "passed": passed,
            "decided": bool(good)}


def near_collapse_outcome(profile: str, gain_formula=None):
    """The Outcome of ``collapse.contraction_near_collapse``."""
    from resharpen.experiments.ledger import Outcome
    v = judge_near_collapse(near_collapse_data(profile), gain_formula)
    good = v["qualifying"]
    worst = max((r["gap"] for r in good), default=float("nan"))
    wrong = sum(r["wrong"] for r in good)
    past = [eps for eps, p in v["ladder"].items() if p["gap"] > NEAR_TOLERANCE]
    ladder = "; ".join(
        f"eps {eps:g}: t_sim {p['t_min']:.4f}-{p['t_max']:.4f}, max gap {p['gap']:.2g}, "
        f"{p['wrong']} misclassified, {p['qualifying']}/{p['rows']} qualifying"
        + ("" if p["qualifying"] or eps == 0 else
           f" (not judged: needs t_sim >= {PREMISE_T_SIM:g}, a smaller eps)")
        for eps, p in v["ladder"].items())
    sides = sum(r["c"] < 1 for r in good), sum(r["c"] >= 1 for r in good)
    closest = min((abs(r["c"] - 1) for r in good), default=float("nan"))
    return Outcome(
        measured=f"max gap {worst:.2g} over {len(good)} blocks with t_sim >= {PREMISE_T_SIM:g}, "
                 f"{wrong} misclassified; gap past {NEAR_TOLERANCE:g} from eps "
                 + (f"{min(past):g}" if past else "none on the ladder"),
        expected=f"gap <= {NEAR_TOLERANCE:g}, 0 misclassified",
        passed=v["passed"],
        detail=f"{ladder}. Qualifying blocks: {sides[0]} predicted to contract (c < 1), "
               f"{sides[1]} not (closest |c - 1| {closest:.2g}); the gain on a real upstream gradient is at most "
               f"{max(p['real_over_gain'] for p in v['ladder'].values()):.2g} of the largest "
               "gain. eps = 0 is exact collapse, where the gap is 0 by the chain rule",
        inconclusive="" if v["decided"] else
        f"no block with eps > 0 has t_sim >= {PREMISE_T_SIM:g}: a ladder with smaller eps "
        "would qualify")
