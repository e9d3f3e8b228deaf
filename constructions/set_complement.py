"""Explicit weights that solve the Set Complement Task (docs/theory.md, a reconstruction).

Each builder is a function from hyper-parameters to a float64 :class:`Transformer` (one layer,
one head, attention only, no positions), with its proof sketch in the docstring. ``build`` picks a
builder by name; ``save``/``load`` round-trip the weights exactly (state dict + JSON config).
``theory_margins`` gives, for any batch of inputs, the margins the theory predicts for the
construction, so a built model can be checked against resharpen.theory.set_complement.formulas input by input.

Common notation: Q is a v x (v-1) orthonormal basis of the complement of the all-ones vector, so
Q Q^T = P = I - 11^T/v; K = lambda / beta. Normalized readouts (attn_out, post, pre) need
beta > 0 and use either RMSNorm on the tight embedding (which lives in 1-perp, so RMSNorm acts as
a centred norm) or LayerNorm on one-hot embeddings (LayerNorm centres); LayerNorm on the tight
embedding is not complement-exact (its mean over the v-1 coordinates is not a multiple of 1 in
token space) and is refused.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from resharpen.constructions.set_complement_names import READOUT_NORMS, VARIANTS  # noqa: F401
from resharpen.experiments.core.model import ModelConfig, Transformer
from resharpen.experiments.core.set_complement_task import check_vocab, validate_inputs
from resharpen.theory.set_complement.formulas import harmonic_margin, readout_margins, unbalanced_margins

DTYPE = torch.float64


@dataclass
class Construction:
    """A built model and the parameters that determine its theoretical margins."""

    model: Transformer
    variant: str
    vocab: int
    norm: str
    norm_kind: str
    lam: float
    beta: float
    gain: float
    lambdas: list[float] = field(default_factory=list)  # per-token lambda (balanced variant)
    self_score: float = 0.0  # attention score on the query itself (unbalanced variant)
    seed: int = 0

    @property
    def width(self) -> int:
        return self.model.cfg.d_model

    @property
    def centred(self) -> bool:
        """Whether the norm acts on a centred residual (tight embedding or LayerNorm)."""
        return self.variant != "one_hot" or self.norm_kind == "layer"

    def params(self) -> dict:
        out = asdict(self)
        out.pop("model")
        return out


def complement_basis(vocab: int) -> torch.Tensor:
    """Q: v x (v-1), orthonormal columns spanning 1-perp (Q^T Q = I, Q Q^T = I - 11^T/v).

    Built from the Helmert contrasts, so it is deterministic and exact to float64 rounding."""
    Q = torch.zeros(vocab, vocab - 1, dtype=DTYPE)
    for k in range(1, vocab):
        Q[:k, k - 1] = 1.0
        Q[k, k - 1] = -float(k)
        Q[:, k - 1] /= math.sqrt(k * (k + 1))
    return Q


def _check_scales(lam: float, beta: float, gain: float, norm: str, norm_kind: str) -> None:
    if norm not in READOUT_NORMS:
        raise ValueError(f"norm {norm!r} is not one of {', '.join(READOUT_NORMS)}")
    if norm_kind not in ("rms", "layer"):
        raise ValueError(f"norm kind {norm_kind!r} is not one of rms, layer")
    if not (isinstance(lam, (int, float)) and math.isfinite(lam) and lam > 0):
        raise ValueError(f"lambda (--lam) must be a finite number > 0, got {lam!r}")
    if not (isinstance(beta, (int, float)) and math.isfinite(beta) and beta != 0):
        raise ValueError(f"beta must be a finite non-zero number, got {beta!r}")
    if not (isinstance(gain, (int, float)) and math.isfinite(gain) and gain > 0):
        raise ValueError(f"gain must be a finite number > 0, got {gain!r}")
    if norm != "none" and beta <= 0:
        raise ValueError(f"normalized readouts need beta > 0, got beta={beta!r}")


def _model(vocab: int, d: int, d_head: int, d_value: int, norm: str, norm_kind: str,
           gain: float) -> Transformer:
    cfg = ModelConfig(vocab=vocab, d_model=d, d_head=d_head, d_value=d_value, norm=norm,
                      norm_kind=norm_kind, eps=0.0)
    model = Transformer(cfg).to(DTYPE)
    with torch.no_grad():
        for module in model.modules():
            if hasattr(module, "gain") and isinstance(module.gain, torch.nn.Parameter):
                module.gain.fill_(gain)
    return model


def _set(model: Transformer, E, U, W_Q, W_K, W_V, W_O) -> Transformer:
    attn = model.blocks[0].attn
    with torch.no_grad():
        model.W_E.copy_(E)
        model.W_U.copy_(U)
        attn.W_Q.copy_(W_Q[None])
        attn.W_K.copy_(W_K[None])
        attn.W_V.copy_(W_V[None])
        attn.W_O.copy_(W_O[None])
    return model


def tight(vocab: int, lam: float, beta: float = 1.0, norm: str = "none", norm_kind: str = "rms",
          gain: float = 1.0) -> Construction:
    """The tight construction, d = d_v = v - 1 (the rank bound's minimum).

    E = Q, U = -beta Q^T, W_Q = W_K = 0 (uniform attention), W_V W_O = (lambda/beta) I.
    Proof: B = E U = -beta P and D = E W_V W_O U = -lambda P, so with w_i = 1/s
        f(t) = B[q] + (1/s) sum_i D[t_i] = -beta P e_q - (lambda/s) P 1_[t]
             == -beta e_q - (lambda/s) 1_[t]   (mod 1).
    All valid logits are equal, every non-query input token sits lambda/s below them and the query
    beta + lambda/s below: complement-exact at every length when beta > -lambda/(v-1).
    With a norm (RMSNorm; beta > 0) the residual stays in 1-perp, and resharpen.theory.set_complement.formulas's
    class-reduced derivation gives the margins (attn_out: beta g sqrt((v-1) v / (s (v-s))))."""
    vocab = check_vocab(vocab)
    _check_scales(lam, beta, gain, norm, norm_kind)
    if norm != "none" and norm_kind == "layer":
        raise ValueError("LayerNorm on the tight (d = v-1) embedding is not complement-exact; "
                         "use --variant one_hot with --norm-kind layer, or --norm-kind rms")
    d = vocab - 1
    Q = complement_basis(vocab)
    zero = torch.zeros(d, d, dtype=DTYPE)
    eye = torch.eye(d, dtype=DTYPE)
    model = _model(vocab, d, d, d, norm, norm_kind, gain)
    _set(model, Q, -beta * Q.T, zero, zero, (lam / beta) * eye, eye)
    return Construction(model, "tight", vocab, norm, norm_kind, lam, beta, gain)


def one_hot(vocab: int, lam: float, beta: float = 1.0, norm: str = "none", norm_kind: str = "rms",
            gain: float = 1.0) -> Construction:
    """One-hot embeddings, d = d_v = v (one above the bound).

    E = I, U = -beta P, W_Q = W_K = 0, W_V W_O = (lambda/beta) I: again B = -beta P, D = -lambda P
    and f(t) == -beta e_q - (lambda/s) 1_[t]. With LayerNorm (which centres) the normalized
    readouts match the tight ones with d = v; with RMSNorm the residual e_q + (K/s) 1_[t] is not
    centred and the margins follow the uncentred formulas (attn_out: beta g sqrt(v / s))."""
    vocab = check_vocab(vocab)
    _check_scales(lam, beta, gain, norm, norm_kind)
    eye = torch.eye(vocab, dtype=DTYPE)
    P = eye - 1.0 / vocab
    model = _model(vocab, vocab, vocab, vocab, norm, norm_kind, gain)
    zero = torch.zeros(vocab, vocab, dtype=DTYPE)
    _set(model, eye, -beta * P, zero, zero, (lam / beta) * eye, eye)
    return Construction(model, "one_hot", vocab, norm, norm_kind, lam, beta, gain)


def balanced(vocab: int, lambdas, beta: float = 1.0) -> Construction:
    """Non-uniform lambda_x with balancing attention: d = v, d_head = 1, d_v = v - 1.

    Target: D[x] == -lambda_x e_x and scores A[q,k] == -log lambda_k (per-query constants do not
    matter), so that w_i lambda_{t_i} = 1/sum_j 1/lambda_{t_j} = H(t)/s for every i (the
    theorem's balanced case; non-query margins H/s, query margin beta + H/s).
    A score that depends only on the key is a rank-one map with a constant query vector, which
    an embedding inside 1-perp cannot produce (sum_x E[x] = 0 forces the constant to be 0): one
    extra coordinate is needed. E = [Q, 1] (invertible, E^-1 = [Q^T; 1^T/v]); the last coordinate
    feeds the query, W_Q = e_v, W_K = Q^T(-log lambda) (key k gets -log lambda_k - mean),
    U = -beta [Q^T; 0] so B = -beta P; W_V = E^-1 Lambda Q / beta (v x (v-1)), W_O = [I, 0]
    so D = E W_V W_O U = -Lambda Q Q^T = -Lambda P == -lambda_x e_x. Readout: none only."""
    vocab = check_vocab(vocab)
    lambdas = np.asarray(lambdas, dtype=np.float64)
    if lambdas.shape != (vocab,) or not np.all(np.isfinite(lambdas)) or np.any(lambdas <= 0):
        raise ValueError(f"lambdas must be {vocab} finite numbers > 0, got {lambdas.tolist()}")
    _check_scales(float(lambdas.min()), beta, 1.0, "none", "rms")
    Q = complement_basis(vocab)
    ones = torch.ones(vocab, 1, dtype=DTYPE)
    E = torch.cat([Q, ones], dim=1)
    E_inv = torch.cat([Q.T, ones.T / vocab], dim=0)
    Lam = torch.diag(torch.as_tensor(lambdas))
    W_Q = torch.zeros(vocab, 1, dtype=DTYPE)
    W_Q[-1, 0] = 1.0
    W_K = torch.zeros(vocab, 1, dtype=DTYPE)
    W_K[:-1, 0] = Q.T @ (-torch.log(torch.as_tensor(lambdas)))
    W_V = E_inv @ Lam @ Q / beta
    W_O = torch.cat([torch.eye(vocab - 1, dtype=DTYPE), torch.zeros(vocab - 1, 1, dtype=DTYPE)], 1)
    U = -beta * torch.cat([Q.T, torch.zeros(1, vocab, dtype=DTYPE)], dim=0)
    model = _model(vocab, vocab, 1, vocab - 1, "none", "rms", 1.0)
    _set(model, E, U, W_Q, W_K, W_V, W_O)
    return Construction(model, "balanced", vocab, "none", "rms", float(lambdas.min()), beta, 1.0,
                        lambdas=lambdas.tolist())


def unbalanced(vocab: int, lam: float, beta: float = 1.0, self_score: float = 1.0) -> Construction:
    """The tight construction with an attention bonus a on the query itself (d = v - 1).

    W_Q = a sqrt(d_head) I, W_K = I gives A = a Q Q^T = a P == a I (mod per-query constants):
    w_q = e^a / (e^a + s - 1) and w_i = 1 / (e^a + s - 1) otherwise. Non-query margins
    lambda / (e^a + s - 1), so m_s / m_2 = (e^a + 1) / (e^a + s - 1): the 2/s law holds iff a = 0.
    Query margin beta + lambda e^a / (e^a + s - 1). Readout: none only."""
    built = tight(vocab, lam, beta)
    d = vocab - 1
    with torch.no_grad():
        attn = built.model.blocks[0].attn
        attn.W_Q.copy_(self_score * math.sqrt(d) * torch.eye(d, dtype=DTYPE)[None])
        attn.W_K.copy_(torch.eye(d, dtype=DTYPE)[None])
    built.variant, built.self_score = "unbalanced", float(self_score)
    return built


def random_lambdas(vocab: int, seed: int, low: float = 0.5, high: float = 2.0) -> np.ndarray:
    """Per-token lambdas lambda_x = lam * r_x with r_x log-uniform in [low, high]."""
    rng = np.random.default_rng(seed)
    return np.exp(rng.uniform(math.log(low), math.log(high), size=vocab))


def build(variant: str, vocab: int, norm: str = "none", norm_kind: str = "rms", lam: float = 1.0,
          beta: float = 1.0, gain: float = 1.0, seed: int = 0, self_score: float = 1.0) -> Construction:
    """Build a construction by name (see VARIANTS)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r} is not one of {', '.join(VARIANTS)}")
    check_vocab(vocab)
    if variant in ("balanced", "unbalanced") and norm != "none":
        raise ValueError(f"the {variant} construction has readout 'none' only, got norm={norm!r}")
    if variant == "tight":
        return tight(vocab, lam, beta, norm, norm_kind, gain)
    if variant == "one_hot":
        return one_hot(vocab, lam, beta, norm, norm_kind, gain)
    if variant == "balanced":
        _check_scales(lam, beta, gain, norm, norm_kind)
        built = balanced(vocab, lam * random_lambdas(vocab, seed), beta)
        built.seed = seed
        return built
    return unbalanced(vocab, lam, beta, self_score)


def theory_margins(built: Construction, tokens: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Predicted (non-query margin, query margin) for each input row of ``tokens`` (N, s)."""
    validate_inputs(tokens, built.vocab)
    count, length = tokens.shape
    lengths = np.full(count, float(length))
    if built.variant == "balanced":
        lams = np.asarray(built.lambdas)[tokens.numpy()]
        h = harmonic_margin(lams)
        return h, built.beta + h
    if built.variant == "unbalanced":
        nq, q = unbalanced_margins(built.vocab, lengths, built.lam, built.beta, built.self_score)
        return np.broadcast_to(nq, lengths.shape).astype(float), np.broadcast_to(q, lengths.shape).astype(float)
    return readout_margins(built.norm, built.vocab, lengths, built.lam, built.beta, built.gain,
                           built.width, built.centred)


def save(built: Construction, folder: str | Path) -> Path:
    """Write ``weights.pt`` (float64 state dict) and ``config.json`` (model config + parameters)."""
    import io

    from resharpen.experiments.core.io import atomic_write_bytes, atomic_write_json, ensure_writable_dir

    folder = ensure_writable_dir(folder)
    buffer = io.BytesIO()
    torch.save(built.model.state_dict(), buffer)
    atomic_write_bytes(folder / "weights.pt", buffer.getvalue())
    atomic_write_json(folder / "config.json", {"model": built.model.cfg.to_dict(),
                                               "construction": built.params()})
    return folder


def load(folder: str | Path) -> Construction:
    """Inverse of :func:`save`: the same weights bit for bit."""
    folder = Path(folder)
    try:
        config = json.loads((folder / "config.json").read_text())
        cfg = ModelConfig.from_dict(config["model"])
        params = config["construction"]
    except FileNotFoundError:
        raise ValueError(f"{folder} holds no saved construction (config.json missing)") from None
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{folder / 'config.json'} is not a valid construction config: {exc}") from None
    model = Transformer(cfg).to(DTYPE)
    state = torch.load(folder / "weights.pt", map_location="cpu", weights_only=True)
    model.load_state_dict(state)
    return Construction(model=model, **params)
