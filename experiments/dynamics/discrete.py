"""The discrete layer updates whose h -> 0 limit is NA (notes B.1, reconstructed; the paper's
Table 1 was not recovered verbatim). N is projection to the sphere, A is evaluated on the
directions theta = N(x), layer l sits at time t = l h:

    postln  theta+ = N(theta + h A)                               (r fixed)
    preln   x+     = x + h A                                      (so r' = <theta, A>, s = r)
    mixln   postln while t < tau, preln afterwards
    periln  x+     = x + h N(A)                                   (s = r |A|)
    ngpt    theta+ = N(theta + h alpha_t (N(A) - theta))          (s = |A| / alpha_t)
    sqrt    theta+ = N(theta + h A / sqrt(t + 1))                 (s = sqrt(t + 1))

Each update is theta + h P_theta A / s + O(h^2), so the stack converges to NA with order 1.
"""
from __future__ import annotations

import numpy as np

from resharpen.experiments.dynamics.particles import Dynamics, attention
from resharpen.theory.dynamics.speed import check_d, check_n, check_positive


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def layer_update(x: np.ndarray, t: float, h: float, dyn: Dynamics, Q=None, K=None, V=None):
    """One layer of the scheme applied to the token matrix x = r theta (rows). Q, K, V default to
    the dynamics' matrices; random stacks pass fresh ones per layer."""
    Q = dyn.Q if Q is None else Q
    K = dyn.K if K is None else K
    V = dyn.V if V is None else V
    r = np.linalg.norm(x, axis=1, keepdims=True)
    theta = x / r
    A = attention(theta, dyn.beta, Q, K, V)
    scheme = dyn.scheme
    if scheme == "mixln":
        scheme = "postln" if t < dyn.tau - 1e-12 else "preln"
    if scheme == "postln":
        return r * _unit(theta + h * A)
    if scheme == "preln":
        return x + h * A
    if scheme == "periln":
        return x + h * _unit(A)
    if scheme == "ngpt":
        return r * _unit(theta + h * dyn.alpha(t) * (_unit(A) - theta))
    return r * _unit(theta + h * A / np.sqrt(t + 1.0))  # sqrt


def run_layers(dyn: Dynamics, theta0: np.ndarray, h: float, layers: int, r0=1.0):
    """Apply ``layers`` updates of step h; return (times, theta (L+1, n, d), r (L+1, n))."""
    check_positive("step h", h)
    if int(layers) != layers or layers < 1:
        raise ValueError(f"layers must be an integer >= 1, got {layers}")
    theta0 = np.asarray(theta0, dtype=np.float64)
    if theta0.ndim != 2:
        raise ValueError(f"theta0 must be an (n, d) array, got shape {theta0.shape}")
    check_n(theta0.shape[0]), check_d(theta0.shape[1])
    theta0 = _unit(theta0)
    x = np.broadcast_to(np.asarray(r0, dtype=np.float64), (theta0.shape[0],))[:, None] * theta0
    xs = [x]
    for layer in range(int(layers)):
        x = layer_update(x, layer * h, h, dyn)
        xs.append(x)
    X = np.stack(xs)
    r = np.linalg.norm(X, axis=2)
    return np.arange(layers + 1) * h, X / r[..., None], r
