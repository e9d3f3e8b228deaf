"""What the synchronization claims of ``dyn.*`` (:mod:`.claims`) measure: Theorem 3.1 (every
scheme's particles synchronize from almost every start when Q^T K = V = I), the limits of its
hypotheses (d = 1, V = Q^T K with a spectral gap), the gradient-flow form it rests on, the time
change of the sqrt scheme and lem:matrix.

* :func:`synchronization_gaps`: 1 - min_{j,k} <theta_j, theta_k> at T/2 and T from Gaussian
  starts;
* :func:`antipodal_d1`: on the circle S^0 = {-1, 1} no token moves, so mixed signs never
  synchronize; at d = 2 a perturbed antipodal pair does (an unstable critical point);
* :func:`split_clusters`: with V = Q^T K = M = diag(1, 1/2, 1/2) the dynamics are the gradient
  ascent of E = sum_{j,k} e^{beta <theta_j, M theta_k>}, and two clusters at +-v_top are stable;
* :func:`gradient_flow_error`: theta_j' = -(2 beta s_j Z_j)^{-1} P_{theta_j} grad_j E with
  E = -sum_{j,k} e^{beta <theta_j, theta_k>} (:func:`interaction_energy`), against the
  particles' velocity;
* :func:`time_change_error`: with speed 1/s(t) = 1/sqrt(t + 1) the change t = e^tau - 1 gives
  theta' = e^{tau/2} P_theta A in tau;
* :func:`matrix_lemma_trials`: lem:matrix, DA has a positive eigenvalue when D is SPD and A
  has exactly one positive eigenvalue.
"""
from __future__ import annotations

import math

import numpy as np

from resharpen.experiments.dynamics import particles as P
from resharpen.theory.dynamics import speed as nd

CLAIMS_ANALYSIS = True
"""Read by the ledger as the code of the checks that call it
(:func:`resharpen.experiments.ledger.where.is_claims_analysis`)."""


def synchronization_gaps(seeds, radial_horizon: float) -> tuple[float, float, str]:
    """(max 1 - min cos at T, max gap(T)/gap(T/2), where the worst gap is) over every scheme and
    seed: 8 Gaussian tokens in R^3 (radii their norms for the radial schemes), T =
    ``radial_horizon`` for the radial schemes and 40 for the others."""
    worst, worst_shrink, worst_at = 0.0, 0.0, ""
    for scheme in nd.SCHEMES:
        for seed in seeds:
            x = np.random.default_rng(seed).standard_normal((8, 3))
            r0 = np.linalg.norm(x, axis=1) if scheme in nd.RADIAL_SCHEMES else 1.0
            T = radial_horizon if scheme in nd.RADIAL_SCHEMES else 40.0
            tr = P.simulate(P.Dynamics(scheme, 1.0), x, T, r0=r0, t_eval=[T / 2, T])
            gap = 1 - tr.gram().min(axis=(1, 2))
            if gap[1] > worst:
                worst, worst_at = gap[1], f"{scheme} seed {seed} at T={T:g}"
            worst_shrink = max(worst_shrink, gap[1] / gap[0] if gap[0] > 1e-12 else 0.0)
    return worst, worst_shrink, worst_at


def antipodal_d1(starts: int, n: int = 4) -> tuple[float, int, int, int, float]:
    """(max movement of a d = 1 token by T = 50, mixed-sign starts still mixed, mixed-sign
    starts, number of starts, cosine at T = 60 of a d = 2 antipodal pair perturbed by 1e-3):
    the starts are one alternating sign pattern and ``starts`` random ones (seed 9), run under
    every scheme."""
    rng = np.random.default_rng(9)
    signs = [np.array([[1.0], [-1.0], [1.0], [-1.0]])]  # both signs, alternating
    signs += [rng.choice([-1.0, 1.0], size=(n, 1)) for _ in range(starts)]
    moved, mixed_final = 0.0, 0
    for scheme in nd.SCHEMES:
        for theta in signs:
            tr = P.simulate(P.Dynamics(scheme, 1.0), theta, 50.0, t_eval=[0.0, 50.0])
            moved = max(moved, float(np.abs(tr.theta[-1] - theta).max()))
            mixed_final += int(np.abs(np.sign(tr.theta[-1]).sum()) < n)  # still both signs
    mixed_start = len(nd.SCHEMES) * sum(int(np.abs(t.sum()) < n) for t in signs)
    # d = 2 contrast: an antipodal pair perturbed by 1e-3 synchronizes
    eps = 1e-3
    th2 = np.array([[1.0, 0.0], [-math.cos(eps), math.sin(eps)]])
    tr2 = P.simulate(P.Dynamics("postln", 1.0), th2, 60.0, t_eval=[60.0])
    cos2 = float(tr2.theta[-1, 0] @ tr2.theta[-1, 1])
    return moved, mixed_final, mixed_start, len(signs), cos2


def split_clusters(seeds) -> tuple[float, float, float, int]:
    """(distance of a kicked two-cluster split to +-v at t = 0, at t = 100, the same split's
    1 - min cos at t = 100 under M = I, starts of ``seeds`` not synchronized at t = 200) for
    Post-LN with Q = I, K = V = M = diag(1, 1/2, 1/2); the distance is max_j of the sine of the
    angle between theta_j and +-v, v = e_1, and a start counts as not synchronized when some
    pair has a negative cosine."""
    M = np.diag([1.0, 0.5, 0.5])
    v = np.array([1.0, 0.0, 0.0])
    dyn = P.Dynamics("postln", 1.0, None, M, M)          # Q = I, K = M, V = M = Q^T K = K^T Q
    split = np.repeat(np.array([v, -v]), 4, axis=0)
    kick = 1e-3 * np.random.default_rng(0).standard_normal(split.shape)
    back = P.simulate(dyn, split + kick, 100.0, t_eval=[100.0])
    def off_axis(theta):  # max_j |theta_j - <theta_j, v> v|: the sine of the angle to +-v
        theta = theta / np.linalg.norm(theta, axis=1, keepdims=True)
        return float(np.linalg.norm(theta - np.outer(theta @ v, v), axis=1).max())

    dist0, dist1 = off_axis(split + kick), off_axis(back.theta[-1])
    ident = P.simulate(P.Dynamics("postln", 1.0), split + kick, 100.0, t_eval=[100.0])
    ident_gap = float(1 - ident.gram().min())
    stuck = 0
    for seed in seeds:
        tr = P.simulate(dyn, P.uniform_sphere(8, 3, seed=seed), 200.0, t_eval=[200.0])
        stuck += float(1 - tr.gram().min()) > 1.0             # some pair has cos < 0 at T = 200
    return dist0, dist1, ident_gap, stuck


def interaction_energy(theta: np.ndarray, beta: float) -> float:
    """E(Theta) = -sum_{j,k} exp(beta <theta_j, theta_k>) (Q = K = V = I)."""
    return float(-np.exp(beta * theta @ theta.T).sum())


def gradient_flow_error() -> float:
    """max over the schemes of |flow - v|_max / |v|_max at t = 0.5 (n = 5, d = 4, beta = 1.3,
    radii 1..2): v the particles' velocity, flow = -P grad E / (2 beta s Z) with grad E by
    central differences (h = 1e-6) of :func:`interaction_energy`, Z_j = sum_k e^{beta <theta_j,
    theta_k>} and Table 2's s_j typed here."""
    n, d, beta, h = 5, 4, 1.3, 1e-6
    theta = P.uniform_sphere(n, d, seed=12)
    r = np.linspace(1.0, 2.0, n)
    grad = np.zeros_like(theta)
    for j in range(n):
        for a in range(d):
            e = np.zeros_like(theta)
            e[j, a] = h
            grad[j, a] = (interaction_energy(theta + e, beta) - interaction_energy(theta - e, beta)) / (2 * h)
    Z = np.exp(beta * theta @ theta.T).sum(axis=1)
    Pgrad = grad - np.einsum("ij,ij->i", theta, grad)[:, None] * theta
    worst = 0.0
    for scheme in nd.SCHEMES:
        dyn = P.Dynamics(scheme, beta)
        v, _ = P.velocity(0.5, theta, r, dyn)
        a = np.linalg.norm(P.attention(theta, beta), axis=1)
        s = {"postln": np.ones(n), "preln": r, "mixln": np.ones(n), "periln": r * a,   # Table 2 at
             "ngpt": a / dyn.alpha(0.5), "sqrt": np.full(n, math.sqrt(1.5))}[scheme]  # t = 0.5 < tau
        flow = -Pgrad / (2 * beta * s * Z)[:, None]
        worst = max(worst, float(np.abs(flow - v).max() / np.abs(v).max()))
    return worst


def time_change_error() -> tuple[bool, float, float, float]:
    """(the tau-side integration succeeded, max |theta(t) - theta(tau)|, t's last value, how far
    the tokens moved). The two sides share no code of the package: the t-side is
    ``particles.simulate`` with the sqrt speed, the tau-side the vector field theta_j' =
    e^{tau/2} (A_j - <theta_j, A_j> theta_j), A = softmax(beta (Theta Q^T)(Theta K^T)^T)
    Theta V^T row-wise, written here and integrated by ``scipy.integrate.solve_ivp`` (so that a
    wrong simulator cannot move both sides alike); rows renormalized at output, as ``simulate``
    does; n = 6, d = 3, beta = 2, tau in [0, 3]."""
    from scipy.integrate import solve_ivp

    n, d, beta = 6, 3, 2.0
    rng = np.random.default_rng(10)
    Q, K, V = (rng.standard_normal((d, d)) / math.sqrt(d) for _ in range(3))
    theta = P.uniform_sphere(n, d, seed=11)
    theta = theta / np.linalg.norm(theta, axis=1, keepdims=True)
    taus = np.linspace(0.0, 3.0, 13)
    ts = np.expm1(taus)
    orig = P.simulate(P.Dynamics("sqrt", beta, Q, K, V), theta, ts[-1], t_eval=ts, rtol=1e-11, atol=1e-13)

    def tau_field(tau: float, y: np.ndarray) -> np.ndarray:
        th = y.reshape(n, d)
        scores = beta * (th @ Q.T) @ (th @ K.T).T
        weights = np.exp(scores - scores.max(axis=1, keepdims=True))
        A = (weights / weights.sum(axis=1, keepdims=True)) @ (th @ V.T)
        projected = A - np.sum(th * A, axis=1, keepdims=True) * th
        return (math.exp(tau / 2) * projected).ravel()

    sol = solve_ivp(tau_field, (0.0, taus[-1]), theta.ravel(), method="DOP853", t_eval=taus,
                    rtol=1e-12, atol=1e-14)
    changed = sol.y.T.reshape(-1, n, d)
    changed = changed / np.linalg.norm(changed, axis=2, keepdims=True)
    err = float(np.abs(orig.theta - changed).max())
    moved = float(np.abs(orig.theta[-1] - theta).max())
    return bool(sol.success), err, float(ts[-1]), moved


def matrix_lemma_trials(trials: int) -> tuple[float, int]:
    """(min of lambda_max(DA) / (lambda_min(D) lambda_+(A)), trials with lambda_max(DA) <= 0)
    over ``trials`` draws (seed 0): k in 2..8, A = U diag(eig) U^T with one eigenvalue in
    [1e-3, 1] and the others in [-10, -0.1], D = B B^T + eps I with eps in [1e-4, 1]."""
    rng = np.random.default_rng(0)
    worst, fails = np.inf, 0
    for i in range(trials):
        k = int(rng.integers(2, 9))
        U, _ = np.linalg.qr(rng.standard_normal((k, k)))
        eig = -rng.uniform(0.1, 10, k)
        eig[0] = rng.uniform(1e-3, 1.0)                 # exactly one small positive eigenvalue
        A = (U * eig) @ U.T
        B = rng.standard_normal((k, k))
        D = B @ B.T + 10.0 ** rng.uniform(-4, 0) * np.eye(k)  # SPD, often ill-conditioned
        lam = np.linalg.eigvals(D @ A).real.max()
        # DA ~ D^{1/2} A D^{1/2} (same inertia as A), whose top eigenvalue is >= lambda_min(D) eig[0]
        worst = min(worst, lam / (np.linalg.eigvalsh(D).min() * eig[0]))
        fails += lam <= 0
    return worst, fails
