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

import copy
import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import torch

from resharpen.constructions.set_complement_names import (  # noqa: F401
    DEFAULT_LAM_PER_TOKEN, NORM_KINDS, READOUT_NORMS, SYMMETRIC_VARIANTS, VARIANTS)
from resharpen.experiments.common import limits
from resharpen.experiments.model.transformer import ModelConfig, Norm, Transformer
from resharpen.experiments.tasks.set_complement import check_vocab, validate_inputs
from resharpen.theory.set_complement.formulas import harmonic_margin, readout_margins, unbalanced_margins

DTYPE = torch.float64


@dataclass
class Construction:
    """A built model and the parameters that determine its theoretical margins.

    ``model``: the float64 one-layer, one-head, attention-only Transformer; ``variant``, ``norm``
    and ``norm_kind`` as given to :func:`build`; ``vocab`` v; ``lam`` lambda and ``beta`` the
    displacement and direct-path scales (K = lambda / beta); ``gain`` g of the norm;
    ``lambdas`` the per-token lambda_x (balanced variant); ``self_score`` the attention score on
    the query (unbalanced variant); ``seed`` of the random lambdas."""

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
        """The residual width d (v - 1 for the tight construction, v for one_hot)."""
        return self.model.cfg.d_model

    @property
    def symmetric(self) -> bool:
        """Whether every input of a length gives the same metrics (tight, one_hot, unbalanced).

        *Why.* Let pi be a permutation of V, Pi its matrix, and t' = pi(t) (any ordered s-subset
        is the image of any other, (0, 1, ..., s-1) included). The attention is uniform (tight,
        one_hot) or has scores a P (unbalanced), and P = Pi P Pi^T, so the weights are the same
        for t and t', and the order of the non-query tokens does not enter (no positions).
        one_hot: the residual of t' is the residual of t times Pi; tight: E = Q and Pi Q = Q R
        with R = Q^T Pi Q orthogonal (Pi maps 1-perp to itself), so the residual is times R.
        Every later map commutes: the norm (RMSNorm with one gain g on every coordinate, eps 0,
        |x R| = |x|; LayerNorm's centring commutes with Pi), W_V W_O = K I, and the unembedding
        (R Q^T = Q^T Pi, P Pi = Pi P). So f(t') = f(t) Pi: the logits are permuted with the
        tokens, and every metric (mass on the seen set, margins of the query and of the other
        seen tokens, TV, KL) is the same. One input per length is then exact (up to float64
        rounding, which does differ); ``resharpen construct`` evaluates the prefixes of one
        permutation. The balanced variant's per-token lambdas break the symmetry."""
        return self.variant in SYMMETRIC_VARIANTS

    @property
    def centred(self) -> bool:
        """Whether the norm acts on a centred residual (tight embedding or LayerNorm)."""
        return self.variant != "one_hot" or self.norm_kind == "layer"

    def params(self) -> dict:
        """The parameters (every field but the model), copied; the model is not copied (at
        v = 10^4 the tight one's weights are 3.2 GB)."""
        return {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self)
                if f.name != "model"}


def complement_basis(vocab: int) -> torch.Tensor:
    """Q: v x (v-1), orthonormal columns spanning 1-perp (Q^T Q = I, Q Q^T = I - 11^T/v).

    The Helmert contrasts, so it is deterministic and exact to float64 rounding: column k
    (k = 1..v-1) is (1, ..., 1, -k, 0, ..., 0) / sqrt(k (k+1)) with k ones. Built in one
    vectorized step (entries 1/sqrt(k(k+1)) above the diagonal of the (row, k) grid, -k/sqrt(k(k+1))
    on it, 0 below; numpy's square root, which is correctly rounded where torch's vectorized one
    is not, so the entries are the correctly rounded 1/sqrt(k(k+1)) and -k/sqrt(k(k+1)))."""
    k = np.arange(1, vocab, dtype=np.float64)
    root = np.sqrt(k * (k + 1.0))
    rows = torch.arange(vocab)[:, None]
    cols = torch.arange(1, vocab)[None, :]
    Q = torch.where(rows < cols, torch.from_numpy(1.0 / root), 0.0)
    Q.diagonal(offset=-1).copy_(torch.from_numpy(-k / root))
    return Q


def check_readout(lam: float, beta: float, gain: float, norm: str, norm_kind: str) -> None:
    """ValueError (TypeError for a value that is not a number) naming the first bad readout,
    norm kind or scale: lam > 0, beta != 0, gain > 0, finite and each inside
    :data:`resharpen.experiments.common.limits.CONSTRUCT_SCALES` (the bound ``construct``
    applies to --lam, --beta and --gain)."""
    for name, value in (("lam", lam), ("beta", beta), ("gain", gain)):
        _check_number(value, name)
    if not isinstance(norm, str) or not isinstance(norm_kind, str):
        raise TypeError(f"norm and norm_kind must be strings, got {norm!r} and {norm_kind!r}")
    if norm not in READOUT_NORMS:
        raise ValueError(f"norm {norm!r} is not one of {', '.join(READOUT_NORMS)}")
    if norm_kind not in NORM_KINDS:
        raise ValueError(f"norm kind {norm_kind!r} is not one of {', '.join(NORM_KINDS)}")
    if not (isinstance(lam, (int, float)) and math.isfinite(lam) and lam > 0):
        raise ValueError(f"lambda (--lam) must be a finite number > 0, got {lam!r}")
    if not (isinstance(beta, (int, float)) and math.isfinite(beta) and beta != 0):
        raise ValueError(f"beta must be a finite non-zero number, got {beta!r}")
    if not (isinstance(gain, (int, float)) and math.isfinite(gain) and gain > 0):
        raise ValueError(f"gain must be a finite number > 0, got {gain!r}")
    if norm != "none" and beta <= 0:
        raise ValueError(f"normalized readouts need beta > 0, got beta={beta!r}")
    limits.check_construct_scales(lam=lam, beta=beta, gain=gain)


def _check_number(value: object, name: str) -> None:
    """TypeError unless ``value`` is a real number (an int or a float, not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")


class _ZeroDraws(torch.overrides.TorchFunctionMode):
    """Within it, ``torch.randn(*shape)`` returns ``torch.zeros(*shape, dtype=float64)``: a
    model built inside draws no random numbers, and its weights start at 0 in float64. (Building
    on the meta device instead costs a one-off 3-4 s import of torch's Python meta kernels.)"""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.randn:
            return torch.zeros(*args, dtype=DTYPE)
        return func(*args, **(kwargs or {}))


def _model(vocab: int, d: int, d_head: int, d_value: int, norm: str, norm_kind: str,
           gain: float) -> Transformer:
    """A float64 model of these widths with zero weights, norms set to gain g (bias 0).

    Built with :class:`_ZeroDraws`, so no random initial weights are drawn or held (at
    v = 10^4 those would be 2.4 GB of float32 and their float64 copy) and no meta-device
    operation is run; every other parameter is written by :func:`_set`."""
    cfg = ModelConfig(vocab=vocab, d_model=d, d_head=d_head, d_value=d_value, norm=norm,
                      norm_kind=norm_kind, eps=0.0)
    with _ZeroDraws():
        model = Transformer(cfg)
    model = model.to(DTYPE)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, Norm):
                module.gain.fill_(gain)
                if module.bias is not None:
                    module.bias.zero_()
    return model


def _set(model: Transformer, E, U, W_Q, W_K, W_V, W_O) -> Transformer:
    """Write the weights; a number c in place of a square matrix stands for c I (0 for zero),
    written in place without a temporary matrix."""
    attn = model.blocks[0].attn
    with torch.no_grad():
        for param, value in ((model.W_E, E), (model.W_U, U), (attn.W_Q[0], W_Q),
                             (attn.W_K[0], W_K), (attn.W_V[0], W_V), (attn.W_O[0], W_O)):
            if isinstance(value, torch.Tensor):
                param.copy_(value)
            else:
                param.zero_()
                param.diagonal().fill_(float(value))
    return model


def tight(vocab: int, lam: float, beta: float = 1.0, norm: str = "none", norm_kind: str = "rms",
          gain: float = 1.0, score_width: int = 1) -> Construction:
    """The tight construction, d = d_v = v - 1 (the rank bound's minimum).

    E = Q, U = -beta Q^T, W_Q = W_K = 0 (uniform attention), W_V W_O = (lambda/beta) I.
    The scores are 0 whatever the query/key width, so it is 1 (``d_head``; ``score_width`` = d
    for :func:`unbalanced`, which writes them): the same logits, bit for bit, as any width, at
    2 d fewer weights per row and no (S x d) query, key or score products.
    Proof: B = E U = -beta P and D = E W_V W_O U = -lambda P, so with w_i = 1/s
        f(t) = B[q] + (1/s) sum_i D[t_i] = -beta P e_q - (lambda/s) P 1_[t]
             == -beta e_q - (lambda/s) 1_[t]   (mod 1).
    All valid logits are equal, every non-query input token sits lambda/s below them and the query
    beta + lambda/s below: complement-exact at every length when beta > -lambda/(v-1).
    With a norm (RMSNorm; beta > 0) the residual stays in 1-perp, and resharpen.theory.set_complement.formulas's
    class-reduced derivation gives the margins (attn_out: beta g sqrt((v-1) v / (s (v-s))))."""
    vocab = check_vocab(vocab)
    check_readout(lam, beta, gain, norm, norm_kind)
    if norm != "none" and norm_kind == "layer":
        raise ValueError("LayerNorm on the tight (d = v-1) embedding is not complement-exact; "
                         "use --variant one_hot with --norm-kind layer, or --norm-kind rms")
    d = vocab - 1
    model = _model(vocab, d, score_width, d, norm, norm_kind, gain)  # first: its build's
    Q = complement_basis(vocab)  # temporaries and Q are never held together
    _set(model, Q, Q.T, 0.0, 0.0, lam / beta, 1.0)
    with torch.no_grad():
        model.W_U.mul_(-beta)  # U = -beta Q^T in place: no v x d temporary
    return Construction(model, "tight", vocab, norm, norm_kind, lam, beta, gain)


def one_hot(vocab: int, lam: float, beta: float = 1.0, norm: str = "none", norm_kind: str = "rms",
            gain: float = 1.0) -> Construction:
    """One-hot embeddings, d = d_v = v (one above the bound).

    E = I, U = -beta P, W_Q = W_K = 0 (query/key width 1, as :func:`tight`), W_V W_O =
    (lambda/beta) I: again B = -beta P, D = -lambda P
    and f(t) == -beta e_q - (lambda/s) 1_[t]. With LayerNorm (which centres) the normalized
    readouts match the tight ones with d = v; with RMSNorm the residual e_q + (K/s) 1_[t] is not
    centred and the margins follow the uncentred formulas (attn_out: beta g sqrt(v / s))."""
    vocab = check_vocab(vocab)
    check_readout(lam, beta, gain, norm, norm_kind)
    P = torch.eye(vocab, dtype=DTYPE) - 1.0 / vocab
    model = _model(vocab, vocab, 1, vocab, norm, norm_kind, gain)
    _set(model, 1.0, -beta * P, 0.0, 0.0, lam / beta, 1.0)
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
    check_readout(float(lambdas.min()), beta, 1.0, "none", "rms")
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
    d = vocab - 1
    built = tight(vocab, lam, beta, score_width=d)
    with torch.no_grad():
        attn = built.model.blocks[0].attn
        attn.W_Q[0].zero_().diagonal().fill_(self_score * math.sqrt(d))
        attn.W_K[0].zero_().diagonal().fill_(1.0)
    built.variant, built.self_score = "unbalanced", float(self_score)
    return built


def random_lambdas(vocab: int, seed: int, low: float = 0.5, high: float = 2.0) -> np.ndarray:
    """Per-token lambdas lambda_x = lam * r_x with r_x log-uniform in [low, high]."""
    rng = np.random.default_rng(seed)
    return np.exp(rng.uniform(math.log(low), math.log(high), size=vocab))


def build(variant: str, vocab: int, norm: str = "none", norm_kind: str = "rms",
          lam: float | None = None, beta: float = 1.0, gain: float = 1.0, seed: int = 0,
          self_score: float = 1.0, max_memory: int | None = None) -> Construction:
    """Build a construction by name: ``variant`` one of VARIANTS, ``norm`` one of READOUT_NORMS.

    ``lam`` (lambda) defaults to 2 v, as ``resharpen construct`` without ``--lam``: the no-norm
    non-query margin lambda / s is then above 2 at every length s <= v - 1.

    tight (d = d_v = v - 1, the dimension bound), one_hot (d = v), balanced (per-token
    lambda_x = lam r_x, attention w_i ~ 1/lambda_{t_i}) and unbalanced (a score ``self_score`` on
    the query) all realize the lemma's form D[x] = u - lambda_x e_x, B[x] = -u - beta e_x, so
    f(t) = -beta e_q - sum_i w_i lambda_{t_i} e_{t_i} at every length s: with uniform attention
    and no norm the non-query margin is lam / s. The readouts ``attn_out`` (x + N(o)), ``post``
    (N(x + o)) and ``pre`` rescale the residual; see :func:`theory_margins` for the margins and
    each builder's docstring for its proof. ValueError names a bad variant, vocab or scale, and
    refuses, before allocating, a size whose weights and evaluation
    (:func:`resharpen.experiments.common.limits.construct_bytes`) exceed ``max_memory`` bytes or,
    when that is None, the memory the machine has available."""
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a string, one of {', '.join(VARIANTS)}; got "
                        f"{type(variant).__name__} {variant!r}")
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r} is not one of {', '.join(VARIANTS)}")
    check_vocab(vocab)
    if lam is None:
        lam = DEFAULT_LAM_PER_TOKEN * vocab
    check_readout(lam, beta, gain, norm, norm_kind)  # every variant, before any allocation
    _check_number(self_score, "self_score")
    if not abs(self_score) <= limits.SELF_SCORE_MAX:
        raise ValueError(f"self_score {self_score!r} is out of range: |self_score| must be at "
                         f"most {limits.SELF_SCORE_MAX:g} (the theory's e^a overflows float64 "
                         "beyond it)")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise ValueError(f"seed must be an integer in [0, 2**63 - 1], got {seed!r}")
    # construct evaluates one input per length of a symmetric variant (report.construction_report)
    limits.require(limits.construct_bytes(variant, vocab,
                                          inputs=1 if variant in SYMMETRIC_VARIANTS else 16),
                   f"the {variant} construction at v = {vocab} (--vocab)", max_memory)
    if variant in ("balanced", "unbalanced") and norm != "none":
        raise ValueError(f"the {variant} construction has readout 'none' only, got norm={norm!r}")
    if variant == "tight":
        return tight(vocab, lam, beta, norm, norm_kind, gain)
    if variant == "one_hot":
        return one_hot(vocab, lam, beta, norm, norm_kind, gain)
    if variant == "balanced":
        check_readout(lam, beta, gain, norm, norm_kind)
        built = balanced(vocab, lam * random_lambdas(vocab, seed), beta)
        built.seed = seed
        return built
    return unbalanced(vocab, lam, beta, self_score)


def theory_margins(built: Construction, tokens: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Predicted (non-query margin, query margin) for each input row of ``tokens`` (N, s): the
    mean valid logit minus the logit of a seen non-query token t_i (i < s), and minus the logit
    of the query t_s (resharpen.theory.set_complement.formulas.readout_margins).

    With K = lam / beta: none, lam / s and beta + lam / s (the 2/s law: m_s = (2/s) m_2);
    attn_out, beta g sqrt(d v / (s (v - s))), no 1/s decay, minimum 2 beta g sqrt(d / v) at
    s = v/2; post tends to attn_out as K grows; pre is post with a rescaled K. balanced: the
    harmonic margin H(t)/s with H(t) the harmonic mean of the lambdas of t."""
    if not isinstance(built, Construction):
        raise TypeError(f"built must be a Construction (what build returns), got "
                        f"{type(built).__name__}")
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


def theory_margins_by_length(built: Construction, tokens: torch.Tensor
                             ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`theory_margins` of every prefix at once: (non-query, query) margins, each
    (N, S), column s-1 for the input made of the first s tokens of each row of ``tokens`` (N, S).

    The length-only variants' margins are evaluated on the vector of lengths 1..S; the balanced
    variant's H(t_1..t_s)/s = 1 / sum_{i <= s} 1/lambda_{t_i} is a cumulative sum."""
    validate_inputs(tokens, built.vocab)
    count, longest = tokens.shape
    if built.variant == "balanced":
        h = 1.0 / np.cumsum(1.0 / np.asarray(built.lambdas)[tokens.numpy()], axis=1)
        return h, built.beta + h
    lengths = np.arange(1, longest + 1, dtype=np.float64)
    if built.variant == "unbalanced":
        nq, q = unbalanced_margins(built.vocab, lengths, built.lam, built.beta, built.self_score)
    else:
        nq, q = readout_margins(built.norm, built.vocab, lengths, built.lam, built.beta,
                                built.gain, built.width, built.centred)
    shape = (count, longest)
    return (np.broadcast_to(np.asarray(nq, dtype=np.float64), shape).copy(),
            np.broadcast_to(np.asarray(q, dtype=np.float64), shape).copy())


WEIGHTS_FILE = "weights.safetensors"
SAVED_FILES = (WEIGHTS_FILE, "config.json")
"""The files :func:`save` writes in its folder."""
LEGACY_WEIGHTS_FILE = "weights.pt"  # saved before safetensors: a pickled state dict, still read


def save(built: Construction, folder: str | Path) -> Path:
    """Write ``weights.safetensors`` (the float64 state dict, with the model config and the
    construction's parameters as JSON in its metadata, ``model_config`` and ``construction``)
    and ``config.json`` (the same two, for reading). The weights file alone is enough to load."""
    from resharpen.experiments.common.io import (atomic_write_json, atomic_write_weights,
                                                 check_folder_files, ensure_writable_dir)
    from resharpen.experiments.common.json_text import dumps_json

    from resharpen.experiments.common.names import check_path

    if not isinstance(built, Construction):
        raise TypeError(f"built must be a Construction (what build returns), got "
                        f"{type(built).__name__}")
    from resharpen.experiments.common.folder_kinds import check_kind

    folder = check_folder_files(check_path(folder, "folder"), SAVED_FILES, "folder")
    check_kind(folder, "construction", "folder")
    folder = ensure_writable_dir(folder)  # after every file is checked: nothing half-written
    state = {name: t.detach().contiguous() for name, t in built.model.state_dict().items()}
    config = {"model": built.model.cfg.to_dict(), "construction": built.params()}
    atomic_write_weights(folder / WEIGHTS_FILE, state,
                         {"model_config": dumps_json(config["model"], indent=None),
                          "construction": dumps_json(config["construction"], indent=None)})
    atomic_write_json(folder / "config.json", config)
    return folder


def load(folder: str | Path) -> Construction:
    """Inverse of :func:`save`: the same weights bit for bit. Reads ``weights.safetensors`` (its
    metadata holds the config), or a folder saved before it, ``weights.pt`` (a state dict, read
    with ``torch.load(weights_only=True)``: tensors only, no code) with ``config.json``.
    ValueError names a missing or corrupt file."""
    from resharpen.experiments.common.names import check_path

    folder = check_path(folder, "folder")
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is not a folder (a saved construction is a folder holding "
                         f"{WEIGHTS_FILE})")
    if (folder / WEIGHTS_FILE).is_file():
        state, config = _read_safetensors(folder / WEIGHTS_FILE)
    else:
        config = _read_config(folder)
        if not (folder / LEGACY_WEIGHTS_FILE).is_file():
            raise ValueError(f"{folder} holds no saved construction weights "
                             f"({WEIGHTS_FILE} or {LEGACY_WEIGHTS_FILE} missing)")
        try:
            state = torch.load(folder / LEGACY_WEIGHTS_FILE, map_location="cpu",
                               weights_only=True)
        except Exception as exc:  # unpickling refused or a corrupt file
            raise ValueError(f"{folder / LEGACY_WEIGHTS_FILE} is not a weights file: "
                             f"{exc!r}"[:300]) from None
    try:
        cfg = ModelConfig.from_dict(config["model"])
        model = Transformer(cfg).to(DTYPE)
        model.load_state_dict(state)
        return Construction(model=model, **config["construction"])
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise ValueError(f"{folder} is not a valid saved construction: {exc!r}"[:300]) from None


def _read_config(folder: Path) -> dict:
    try:
        return json.loads((folder / "config.json").read_text())
    except FileNotFoundError:
        raise ValueError(f"{folder} holds no saved construction (config.json missing)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{folder / 'config.json'} is not a valid construction config: "
                         f"{exc}") from None


def _read_safetensors(path: Path) -> tuple[dict, dict]:
    """(state dict, {"model", "construction"}) of a saved ``weights.safetensors``."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
            config = {"model": json.loads(metadata["model_config"]),
                      "construction": json.loads(metadata["construction"])}
            state = {name: handle.get_tensor(name) for name in handle.keys()}
    except (SafetensorError, OSError, KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"{path} is not a construction's weights file: {exc!r}"[:300]) from None
    return state, config
