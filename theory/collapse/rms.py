"""RMSNorm geometry, gradient contraction and the loss floor of a collapsed network
(arXiv 2608.09417, Theorem C.6, Theorem 3.6, Theorem 3.8).

RMSNorm without gain or epsilon, row-wise: RMS(y) = sqrt(d) y / ||y||. Its Jacobian is

    J(y) = (sqrt(d)/||y||) (I - y y^T / ||y||^2),

symmetric, with spectral norm sqrt(d)/||y|| (d >= 2) and kernel span(y); hence every gradient that
reaches y through RMS is orthogonal to y: <y, dL/dy> = 0.

Theorem C.6 (a row rescaling moves t_sim by a bounded amount). For T = diag(tau_i > 0),
mu = tr T / n and eta = ||T - mu I||_2 / mu < 1, writing T Y = mu (I + E) Y with ||E||_2 = eta,

    max(sqrt(t) - eta, 0)^2 / (1 + eta)^2 <= t_sim(T Y) <= (sqrt(t) + eta)^2 / (1 - eta)^2,

where t = t_sim(Y) (triangle inequality on ||Pi_1 (I + E) Y|| and ||(I + E) Y||).

Theorem 3.6 (exact collapse). If Y = 1 y^T then each Post-Norm sublayer maps gradients with
||dL/dX|| <= c ||dL/dX_next||, c(y, a) = a sqrt(d)/||y||, a the sublayer's own gain
||dL/dX|| / ||dL/dY|| (skip path included); c < 1 iff ||y|| > a sqrt(d), and a stack of such
sublayers contracts gradients geometrically.

Theorem 3.8(i) (loss floor). With p_freq the label frequencies and L_freq = H(p_freq) (nats),
if ||X - Pi_1 X||_F <= eps then the mean cross-entropy of logits X W satisfies

    CE >= L_freq - 2 ||W||_2 eps / sqrt(n):

CE is convex in X, the best row-constant predictor is p_freq (CE of a constant q is
L_freq + KL(p_freq || q)), and ||grad_X CE||_F <= sqrt(2) ||W||_2 / sqrt(n) <= 2 ||W||_2/sqrt(n).
"""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp


def rms_norm(y: np.ndarray) -> np.ndarray:
    """Row-wise RMS(y) = sqrt(d) y / ||y|| (no gain, no epsilon)."""
    y = np.asarray(y, dtype=float)
    norms = np.linalg.norm(y, axis=-1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("RMSNorm without epsilon is undefined at y = 0")
    return np.sqrt(y.shape[-1]) * y / norms


def rms_jacobian(y: np.ndarray) -> np.ndarray:
    """J(y) = (sqrt(d)/||y||)(I - y y^T/||y||^2) for one vector y of length d."""
    y = np.asarray(y, dtype=float)
    if y.ndim != 1 or y.size < 1:
        raise ValueError(f"y must be a non-empty vector, got shape {y.shape}")
    r2 = float(y @ y)
    if r2 == 0:
        raise ValueError("RMSNorm without epsilon is undefined at y = 0")
    d = y.size
    return np.sqrt(d / r2) * (np.eye(d) - np.outer(y, y) / r2)


def rms_jacobian_norm(y: np.ndarray) -> float:
    """||J(y)||_2 = sqrt(d)/||y|| (for d >= 2)."""
    y = np.asarray(y, dtype=float)
    if y.ndim != 1 or y.size < 2:
        raise ValueError(f"y must be a vector of length d >= 2, got shape {y.shape}")
    return float(np.sqrt(y.size) / np.linalg.norm(y))


def contraction_factor(y_norm, gain, d: int):
    """Theorem 3.6: c(y, a) = a sqrt(d) / ||y||."""
    y_norm, gain = np.asarray(y_norm, dtype=float), np.asarray(gain, dtype=float)
    if np.any(y_norm <= 0) or np.any(gain < 0) or d < 1:
        raise ValueError(f"need ||y|| > 0, gain >= 0, d >= 1; got {y_norm}, {gain}, {d}")
    return gain * np.sqrt(d) / y_norm


def rescaling_eta(scales: np.ndarray) -> float:
    """eta = ||T - mu I||_2 / mu for T = diag(scales), mu = mean(scales)."""
    scales = np.asarray(scales, dtype=float)
    if scales.ndim != 1 or scales.size < 1 or np.any(scales <= 0):
        raise ValueError("row scales must be a non-empty vector of positive numbers")
    mu = scales.mean()
    return float(np.max(np.abs(scales - mu)) / mu)


def rescaling_bounds(t, eta):
    """Theorem C.6: (lower, upper) bounds on t_sim(T Y) from t = t_sim(Y) and eta < 1."""
    t, eta = np.asarray(t, dtype=float), np.asarray(eta, dtype=float)
    if np.any(eta < 0) or np.any(eta >= 1):
        raise ValueError(f"eta must lie in [0, 1), got {eta!r}")
    if np.any(t < 0) or np.any(t > 1):
        raise ValueError(f"t must lie in [0, 1], got {t!r}")
    root = np.sqrt(t)
    lower = np.maximum(root - eta, 0.0) ** 2 / (1.0 + eta) ** 2
    upper = (root + eta) ** 2 / (1.0 - eta) ** 2
    return lower, upper


def label_frequencies(labels: np.ndarray, vocab: int) -> np.ndarray:
    """p_freq: the empirical distribution of integer labels over [0, vocab)."""
    labels = np.asarray(labels)
    if labels.size == 0 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError("labels must be a non-empty integer array")
    if labels.min() < 0 or labels.max() >= vocab:
        raise ValueError(f"labels must lie in [0, {vocab - 1}], got [{labels.min()}, {labels.max()}]")
    return np.bincount(labels.ravel(), minlength=vocab) / labels.size


def frequency_loss(labels: np.ndarray, vocab: int) -> float:
    """L_freq = H(p_freq) in nats: the loss of the best position-independent predictor."""
    p = label_frequencies(labels, vocab)
    p = p[p > 0]
    return float(-np.sum(p * np.log(p)))


def cross_entropy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Mean cross-entropy (nats) of rows of ``logits`` (n, v) against integer ``labels`` (n,)."""
    logits = np.asarray(logits, dtype=float)
    labels = np.asarray(labels)
    log_z = logsumexp(logits, axis=-1)
    return float(np.mean(log_z - np.take_along_axis(logits, labels[:, None], axis=-1)[:, 0]))


def loss_floor(labels: np.ndarray, vocab: int, head: np.ndarray, eps: float) -> float:
    """Theorem 3.8(i): L_freq - 2 ||W||_2 eps / sqrt(n)."""
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps!r}")
    n = np.asarray(labels).size
    return frequency_loss(labels, vocab) - 2.0 * np.linalg.norm(head, 2) * eps / np.sqrt(n)
