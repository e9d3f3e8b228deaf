"""Backward-stage checks with autograd (arXiv 2608.09417, Stage II and Theorem 3.8(ii)).

* :func:`rms_gradient_check`: through RMSNorm (no gain, eps = 0) every gradient is orthogonal to
  its input, <y, dL/dy> = 0, and the autograd Jacobian equals (sqrt d/|y|)(I - y y^T/|y|^2)
  with spectral norm sqrt d/|y|.
* :func:`norm_growth_step` (Prop. D.2): at exact collapse (X = 1 x^T), one gradient step of size
  eta on W_O (or on the SwiGLU output matrix W2) changes the sublayer output to
  Y(eta) = Y - eta U with U = H H^T G (H the sublayer's hidden state, G = dL/dY), and since
  <Y, U> = 0 row-wise, ||Y(eta)||^2 = ||Y||^2 + eta^2 ||U||^2 exactly.
* :func:`gradient_flow`: in an exactly collapsed random-weight stack, per-sublayer gradient norms
  along the residual path. Post-Norm: ||dL/dX_k|| <= c_k ||dL/dX_{k+1}|| with
  c_k = a_k max_i sqrt d/|y_i| (Theorem 3.6), a geometric decay when every c_k < 1; Pre-Norm:
  the skip path bypasses the norm and gradients are not contracted. Definition 3.5 takes a_k to
  be the measured ratio ||dL/dX_k||/||dL/dY_k||, which makes the bound hold by construction;
  :func:`sublayer_gain` estimates a_k independently of any gradient (the norm of the sublayer's
  Jacobian on the gradients that pass the RMSNorm: Lanczos on torch.func jvp/vjp products).
* :func:`collapsed_gradients` (Theorem 3.8(ii)): a collapsed Post-Norm stack whose head outputs
  p_freq at every position has every parameter gradient equal to zero.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import jvp, vjp

from resharpen.experiments.collapse.stack import StackConfig, build_stack
from resharpen.experiments.model.transformer import ModelConfig, Transformer
from resharpen.theory.collapse.rms import frequency_loss, label_frequencies


def _rms(y: torch.Tensor) -> torch.Tensor:
    return F.rms_norm(y, (y.shape[-1],), None, 0.0)


def rms_gradient_check(d: int = 64, trials: int = 8, seed: int = 0) -> dict:
    """Worst cosine(y, dL/dy), worst Jacobian error and worst |(||J||_2 - sqrt d/|y|)| relative,
    over random y and random smooth losses L(RMS(y))."""
    if d < 2:
        raise ValueError(f"d must be >= 2 for a non-trivial RMSNorm Jacobian, got {d}")
    gen = torch.Generator().manual_seed(seed)
    worst = {"cosine": 0.0, "jacobian": 0.0, "norm": 0.0}
    for _ in range(trials):
        y = (torch.randn(d, generator=gen, dtype=torch.float64)
             * float(torch.rand(1, generator=gen) * 10 + 0.1)).requires_grad_(True)
        w = torch.randn(d, d, generator=gen, dtype=torch.float64)
        loss = torch.tanh(_rms(y) @ w).pow(2).sum() + (_rms(y) ** 3).sum()
        (g,) = torch.autograd.grad(loss, y)
        yd = y.detach()
        worst["cosine"] = max(worst["cosine"], abs(float(yd @ g)) / float(yd.norm() * g.norm()))
        J = torch.autograd.functional.jacobian(_rms, yd)
        formula = math.sqrt(d) / yd.norm() * (torch.eye(d, dtype=yd.dtype)
                                               - torch.outer(yd, yd) / yd.dot(yd))
        worst["jacobian"] = max(worst["jacobian"],
                                float((J - formula).abs().max() / formula.abs().max()))
        spec = float(torch.linalg.matrix_norm(J, ord=2))
        worst["norm"] = max(worst["norm"], abs(spec * float(yd.norm()) / math.sqrt(d) - 1.0))
    return worst


def _collapsed_input(n: int, d: int, seed: int, dtype=torch.float64) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed + 7)
    x = torch.randn(d, generator=gen, dtype=dtype)
    return (x * math.sqrt(d) / x.norm()).expand(1, n, d).clone()


def norm_growth_step(sublayer: str = "attn", n: int = 16, d: int = 32, eta: float = 0.1,
                     collapsed: bool = True, seed: int = 0) -> dict:
    """Prop. D.2 on one Post-Norm sublayer of :class:`Transformer` (single head, SwiGLU).

    The loss is a random smooth function of RMS(Y), as in any Post-Norm network. Returns the
    measured growth ||Y(eta)||^2 - ||Y||^2, the prediction eta^2 ||U||^2, the cross term <Y, U>
    and the relative error. With ``collapsed=False`` (random rows) the cross term is generic."""
    if sublayer not in ("attn", "mlp"):
        raise ValueError(f"sublayer must be 'attn' or 'mlp', got {sublayer!r}")
    if not (math.isfinite(eta) and eta > 0):
        raise ValueError(f"step size eta must be finite and > 0, got {eta!r}")
    cfg = StackConfig(n=n, d=d, depth=1, norm="post", mlp="swiglu", multiplier=4.0, t0=0.5,
                      seed=seed)  # t0 unused: the input is built below
    block = build_stack(cfg).blocks[0]
    block.requires_grad_(True)
    if collapsed:
        x = _collapsed_input(n, d, seed)
    else:
        x = torch.randn(1, n, d, generator=torch.Generator().manual_seed(seed + 3),
                        dtype=torch.float64)
        x = x * math.sqrt(d) / x.norm(dim=-1, keepdim=True)
    gen = torch.Generator().manual_seed(seed + 11)
    readout = torch.randn(d, d, generator=gen, dtype=torch.float64)

    if sublayer == "attn":
        weight = block.attn.W_O

        def forward():
            out, probs = block.attn(x)
            hidden = probs[:, 0] @ (x @ block.attn.W_V[0])
            return x + out, hidden
    else:
        weight = block.mlp.W_out

        def forward():
            hidden = F.silu(x @ block.mlp.W_gate) * (x @ block.mlp.W_in)
            return x + hidden @ block.mlp.W_out, hidden

    y, hidden = forward()
    loss = torch.tanh(_rms(y) @ readout).pow(2).sum()
    g_y, g_w = torch.autograd.grad(loss, (y, weight))
    with torch.no_grad():
        U = hidden @ hidden.transpose(-1, -2) @ g_y
        weight -= eta * g_w
        y_new, _ = forward()
        grown = float(y_new.pow(2).sum() - y.pow(2).sum())
        predicted = eta ** 2 * float(U.pow(2).sum())
        cross = float((y * U).sum())
        # the update of Y is exactly -eta U (Y is linear in W_O / W2)
        update_err = float((y_new - (y - eta * U)).abs().max() / (eta * U.abs().max()))
    return {"growth": grown, "predicted": predicted, "cross": cross,
            "cross_relative": abs(cross) / float(y.detach().norm() * U.norm()),
            "relative_error": abs(grown - predicted) / predicted, "update_error": update_err}


def sublayer_gain(sublayer: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
                  rtol: float = 1e-10, seed: int = 0) -> tuple[float, int]:
    """a = sup ||J^T G||_F / ||G||_F over G in S, with J the Jacobian of Y = ``sublayer``(X) at
    ``x`` and S = {G : every row G_i is orthogonal to y_i}; returns (a, operator applications).

    In a Post-Norm stack dL/dY_k = J_RMS(y)^T dL/dX_{k+1} lies in S (J_RMS(y) y = 0 and J_RMS is
    symmetric), so ||dL/dX_k|| = ||J^T dL/dY_k|| <= a ||dL/dY_k||: a bounds the gain of
    Definition 3.5 without looking at any gradient. a^2 is the largest eigenvalue of the
    symmetric operator G -> P_S J J^T P_S G (``torch.func.vjp`` for J^T, ``torch.func.jvp`` for
    J), found by Lanczos iteration (``scipy.sparse.linalg.eigsh``, seeded start, relative
    tolerance ``rtol``)."""
    from scipy.sparse.linalg import LinearOperator, eigsh

    y, pullback = vjp(sublayer, x)
    unit = (y / y.norm(dim=-1, keepdim=True)).detach()
    shape, size, applied = y.shape, y.numel(), [0]

    def project(g: torch.Tensor) -> torch.Tensor:  # onto S, row by row
        return g - (g * unit).sum(-1, keepdim=True) * unit

    def apply(vector: np.ndarray) -> np.ndarray:
        applied[0] += 1
        g = project(torch.as_tensor(np.asarray(vector).reshape(shape), dtype=y.dtype))
        (back_g,) = pullback(g)
        _, forward = jvp(sublayer, (x,), (back_g,))
        return project(forward).reshape(-1).numpy()

    start = project(torch.randn(shape, generator=torch.Generator().manual_seed(seed),
                                dtype=y.dtype)).reshape(-1).numpy()
    operator = LinearOperator((size, size), matvec=apply, dtype=np.float64)
    (top,) = eigsh(operator, k=1, which="LA", v0=start, tol=rtol, return_eigenvectors=False)
    return math.sqrt(max(float(top), 0.0)), applied[0]


def gradient_flow(norm: str = "post", n: int = 32, d: int = 32, depth: int = 24,
                  multiplier: float = 4.0, mlp: str | None = "swiglu", seed: int = 0,
                  independent_gain: bool = False, model: Transformer | None = None) -> dict:
    """Per-sublayer gradient norms along the residual path of an exactly collapsed stack.

    Returns arrays over sublayers k = 0..K-1 (attention, then FFN, per block, input side first):
    ``grad_x`` = ||dL/dX_k|| (the sublayer's residual input), ``grad_y`` = ||dL/dY_k||
    (Y_k = X_k + f_k), ``gain`` a_k = grad_x / grad_y (Definition 3.5, measured),
    ``jac`` = max_i sqrt d/|y_i| (Post-Norm) and ``factor`` c_k = a_k jac, with ``grad_out`` =
    ||dL/dX_K|| at the stack output. The loss is a fixed random linear readout of the output, so
    dL/dX_K is a random direction.

    With ``independent_gain`` (Post-Norm only) also ``gain_bound`` = :func:`sublayer_gain` of each
    sublayer Y = X + f(X) at its input, ``factor_bound`` = gain_bound * jac (Theorem 3.6's c_k
    with a gain that no gradient decided), ``iterations`` (operator applications used) and
    ``sublayer_error`` = max |X_k + f_k(X_k) - Y_k| (the sublayer functions re-evaluated against
    the model's own captured Y_k).

    ``model``: a stack to use instead of the random one of these settings (its width d, depth,
    placement and MLP must be these), e.g. one with hand-set weights; the collapsed input is the
    same."""
    if independent_gain and norm != "post":
        raise ValueError(f"independent_gain needs norm='post' (the gradients that reach Y_k pass "
                         f"an RMSNorm), got norm={norm!r}")
    cfg = StackConfig(n=n, d=d, depth=depth, norm=norm, mlp=mlp, multiplier=multiplier,
                      t0=0.5, seed=seed)  # t0 unused: the input is exactly collapsed
    if model is None:
        model = build_stack(cfg)
    else:
        shape = (model.cfg.d_model, model.cfg.n_layers, model.cfg.norm, model.cfg.mlp)
        if shape != (d, depth, norm, mlp):
            raise ValueError(f"model has (d, depth, norm, mlp) = {shape}, "
                             f"not {(d, depth, norm, mlp)}")
    sublayers = ("attn", "mlp") if mlp else ("attn",)
    residual_in = {"attn": "hook_resid_pre", "mlp": "hook_resid_mid"}  # X_k, what sublayer k reads
    points = ["blocks.*.hook_resid_*"]
    points += ["blocks.*.hook_*_norm_out_input"] if norm == "post" else []
    x = _collapsed_input(n, d, seed).requires_grad_(True)
    with model.capture(*points) as cache:
        h = x
        for block in model.blocks:
            h, _ = block(h)
    layers = range(depth)
    xs = [cache[f"blocks.{i}.{residual_in[s]}"] for i in layers for s in sublayers]  # X_0..X_{K-1}
    readout = torch.randn(h.shape, generator=torch.Generator().manual_seed(seed + 5),
                          dtype=h.dtype)
    loss = (readout * h).sum()
    if norm == "post":  # Y_k = X_k + f_k enters the output norm, X_{k+1} = RMS(Y_k) leaves it
        ys = [cache[f"blocks.{i}.hook_{s}_norm_out_input"] for i in layers for s in sublayers]
        grads = torch.autograd.grad(loss, xs + [h] + ys)  # X_0, ..., X_K (X_K = output), Y
        g = [float(t.norm()) for t in grads]
        grad_x, grad_out, grad_y = g[:len(ys)], g[len(ys)], g[len(ys) + 1:]
        jac = [float((math.sqrt(d) / y.detach().norm(dim=-1)).max()) for y in ys]
    else:  # Y_k = X_{k+1}; the last Y is the output
        g = [float(t.norm()) for t in torch.autograd.grad(loss, xs + [h])]
        grad_x, grad_y, grad_out = g[:-1], g[1:], g[-1]
        jac = [1.0] * len(grad_x)
    grad_x, grad_y, jac = map(np.asarray, (grad_x, grad_y, jac))
    gain = grad_x / grad_y
    result = {"grad_x": grad_x, "grad_y": grad_y, "gain": gain, "jac": jac,
              "factor": gain * jac, "grad_out": grad_out, "norm": norm}
    if independent_gain:
        functions = [_sublayer_function(block, s) for block in model.blocks for s in sublayers]
        bounds, steps, error = [], [], 0.0
        for k, (function, x_k, y_k) in enumerate(zip(functions, xs, ys)):
            x_k = x_k.detach()
            with torch.no_grad():
                error = max(error, float((function(x_k) - y_k.detach()).abs().max()))
            a, used = sublayer_gain(function, x_k, seed=seed + k)
            bounds.append(a)
            steps.append(used)
        result.update(gain_bound=np.asarray(bounds), factor_bound=np.asarray(bounds) * jac,
                      iterations=np.asarray(steps), sublayer_error=error)
    return result


def jacobian_norm(function: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
                  rtol: float = 1e-10, seed: int = 0) -> tuple[float, int]:
    """||J||_2 of ``function`` at ``x``: the largest gain sup ||J^T G|| / ||G|| of any gradient G
    pulled back through it; returns (gain, operator applications). The square root of the largest
    eigenvalue of G -> J J^T G (``torch.func.vjp`` then ``torch.func.jvp``, no projection and no
    knowledge of the function's parts), by Lanczos (``scipy.sparse.linalg.eigsh``, seeded)."""
    from scipy.sparse.linalg import LinearOperator, eigsh

    y, pullback = vjp(function, x)
    shape, size, applied = y.shape, y.numel(), [0]

    def apply(vector: np.ndarray) -> np.ndarray:
        applied[0] += 1
        (back_g,) = pullback(torch.as_tensor(np.asarray(vector).reshape(shape), dtype=y.dtype))
        _, forward = jvp(function, (x,), (back_g,))
        return forward.reshape(-1).detach().numpy()

    start = torch.randn(shape, generator=torch.Generator().manual_seed(seed),
                        dtype=y.dtype).reshape(-1).numpy()
    operator = LinearOperator((size, size), matvec=apply, dtype=np.float64)
    (top,) = eigsh(operator, k=1, which="LA", v0=start, tol=rtol, return_eigenvectors=False)
    return math.sqrt(max(float(top), 0.0)), applied[0]


def contraction_condition(n: int = 32, d: int = 32, depth: int = 12, multiplier: float = 1.0,
                          mlp: str | None = None, seed: int = 0,
                          betas: tuple[float, ...] = (0.0,),
                          layers: tuple[int, ...] | None = None) -> list[dict]:
    """Theorem 3.6's condition, sublayer by sublayer, in an exactly collapsed random Post-Norm
    stack (the stack and input of :func:`gradient_flow`).

    For each Post-Norm sublayer block B(X) = N_out(X + f_beta(X)) at its own collapsed input X_k
    (the blocks of ``layers``, default all) and each ``beta``, with f_beta(X) = f(X) + beta X u u^T
    (u the unit direction of X_k's rows: beta amplifies the collapsed direction, beta = 0 is the
    random sublayer itself), one row with

    * ``y_norm`` = max_i ||y_i|| of y = X_k + f_beta(X_k) (the rows are equal at collapse) and
      ``a`` = :func:`sublayer_gain` of X -> X + f_beta(X) (the gain on the gradients that pass
      the RMSNorm, no gradient used): the theorem's side, c = a sqrt d / ||y|| (computed by the
      caller);
    * ``gain`` = :func:`jacobian_norm` of the whole block through the model's own norm module:
      the largest factor by which the block multiplies any gradient, measured, no formula.

    The block contracts every gradient exactly when ``gain`` < 1; the theorem says this is when
    ||y|| > a sqrt d."""
    rows = []
    for i, s, x_k, maps in collapsed_post_blocks(n, d, depth, multiplier, mlp, seed, betas,
                                                 range(depth) if layers is None else layers):
        for beta, amplified, whole in maps:
            with torch.no_grad():
                y_norm = float(amplified(x_k).norm(dim=-1).max())
            a, _ = sublayer_gain(amplified, x_k, seed=seed + 2 * i)
            gain, _ = jacobian_norm(whole, x_k, seed=seed + 2 * i + 1)
            rows.append({"layer": i, "sublayer": s, "beta": beta, "y_norm": y_norm,
                         "a": a, "gain": gain})
    return rows


def collapsed_post_blocks(n: int, d: int, depth: int, multiplier: float, mlp: str | None,
                          seed: int, betas, layers):
    """The Post-Norm sublayer blocks of the stack of :func:`gradient_flow` fed an exactly
    collapsed input: for each layer of ``layers`` and each sublayer, (layer, sublayer, X_k the
    sublayer's collapsed residual input, [(beta, f_beta, B_beta) for each of ``betas``]), with
    f_beta(X) = X + f(X) + beta (X u) u^T (u the unit direction of X_k's rows: beta amplifies the
    collapsed direction; beta = 0 is the random sublayer) and B_beta = N_out o f_beta through the
    model's own norm module."""
    cfg = StackConfig(n=n, d=d, depth=depth, norm="post", mlp=mlp, multiplier=multiplier,
                      t0=0.5, seed=seed)
    model = build_stack(cfg)
    sublayers = ("attn", "mlp") if mlp else ("attn",)
    residual_in = {"attn": "hook_resid_pre", "mlp": "hook_resid_mid"}
    with torch.no_grad(), model.capture("blocks.*.hook_resid_*") as cache:
        h = _collapsed_input(n, d, seed)
        for block in model.blocks:
            h, _ = block(h)
    for i in layers:
        block = model.blocks[i]
        for s in sublayers:
            x_k = cache[f"blocks.{i}.{residual_in[s]}"].detach()
            unit = x_k[0, 0] / x_k[0, 0].norm()
            inner = _sublayer_function(block, s)
            norm_out = block.attn_norm_out if s == "attn" else block.mlp_norm_out
            maps = []
            for beta in betas:
                def amplified(z, inner=inner, beta=beta, unit=unit):
                    return inner(z) + beta * (z @ unit)[..., None] * unit

                def whole(z, amplified=amplified, norm_out=norm_out):
                    return norm_out(amplified(z))

                maps.append((beta, amplified, whole))
            yield i, s, x_k, maps


def _sublayer_function(block, sublayer: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """Y = X + f(X) of one Post-Norm sublayer (what its output norm receives), eval mode."""
    if sublayer == "attn":
        return lambda x: x + block.attn(x)[0]
    return lambda x: x + block.mlp(x)


def collapsed_gradients(n: int = 12, d: int = 16, vocab: int = 5, n_layers: int = 2,
                        matched: bool = True, collapsed: bool = True, seed: int = 0) -> dict:
    """Theorem 3.8(ii) with autograd on :class:`Transformer` (Post-Norm, RMSNorm, SwiGLU).

    The input repeats one token (no positions), so every hidden state is row-constant; W_U is set
    so that the logits equal log p_freq of the labels at every position. Returns the largest
    absolute parameter gradient (expected 0 up to rounding), the loss and L_freq. Contrasts:
    ``matched=False`` sets the head to a different distribution; ``collapsed=False`` feeds
    distinct tokens."""
    cfg = ModelConfig(vocab=vocab, d_model=d, n_layers=n_layers, n_heads=2, norm="post",
                      norm_kind="rms", mlp="swiglu", d_mlp=2 * d, eps=0.0, init_std=0.3)
    torch.manual_seed(seed)
    model = Transformer(cfg).double()
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, vocab, n)
    labels[:vocab] = np.arange(vocab)  # every class present: log p_freq finite
    p = label_frequencies(labels, vocab)
    if not matched:
        p = rng.dirichlet(np.ones(vocab))
    tokens = torch.zeros(1, n, dtype=torch.long) if collapsed else \
        torch.as_tensor(rng.integers(0, vocab, (1, n)))
    with torch.no_grad():
        h = model.residual(torch.zeros(1, n, dtype=torch.long))
        for block in model.blocks:
            h, _ = block(h)
        row = h[0, 0]
        model.W_U.copy_(torch.outer(row, torch.log(torch.as_tensor(p))) / row.dot(row))
    logits = model(tokens)
    loss = F.cross_entropy(logits[0], torch.as_tensor(labels))
    loss.backward()
    worst = max(float(prm.grad.abs().max()) for prm in model.parameters() if prm.grad is not None)
    return {"max_grad": worst, "loss": float(loss.detach()), "l_freq": frequency_loss(labels, vocab),
            "n_parameters": sum(prm.numel() for prm in model.parameters())}
