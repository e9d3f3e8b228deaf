"""The transformer: one config dataclass and one table of normalization schemes.

Notation (rows are tokens; weights act on the right, as in the theory):
    x_0 = W_E[t] (+ W_pos[position])                      residual stream, width d
    f(x) = sum_h softmax(q^h k^h^T / sqrt(d_head) + causal mask) x W_V^h W_O^h,
           q^h = x W_Q^h, k^h = x W_K^h            (each rotated by its position under RoPE)
    logits = N_final(x_L) W_U                               (N_final where the scheme has one)

Each sublayer f (attention, then the optional MLP) of layer l (0-based, of L layers) is
wrapped by the residual rule its scheme gives that layer: one entry of the table
:data:`resharpen.experiments.model.schemes.SCHEMES` (:class:`~resharpen.experiments.model.schemes.Scheme`),
which, given l, says which norms and parameters the layer has (:class:`Layer`) and whether a
final norm follows (the registry's docstring writes every rule out). N = RMSNorm or LayerNorm,
its gain learned (LayerNorm also a bias) or frozen at 1 (``norm_gain="frozen"``: no parameters).

mixln (Li et al. 2024, Mix-LN): Post-LN in the first floor(alpha L) layers, alpha = 0.25, Pre-LN
after. Here at least one layer is Post-LN, so that a model of fewer than 4 layers still mixes: a
1-layer model is N_final(N(x + f(x))), with a 2-layer MLP model Post-LN in layer 0 and Pre-LN in
layer 1. ln_scaling (Sun et al. 2025, LayerNorm Scaling): the layer numbered l + 1 from 1 scales
the output of its input norms (gain and bias included) by 1/sqrt(l + 1).

ngpt (Loshchilov et al. 2024, arXiv 2410.01131): x_0 = u(W_E[t] (+ W_pos)) and every residual on
the unit sphere; the rule moves it towards the normalized sublayer output by the learnable eigen
learning rates alpha (alpha_A for attention, alpha_M for the MLP, vectors of width d), then
projects it back. Queries and keys are normalized per head and scaled by a learnable s_qk
(width d_head per head), with softmax scale sqrt(d_head) in place of 1/sqrt(d_head); the MLP's
pre-activations are scaled, SwiGLU u = s_u * (x W_in), nu = s_nu sqrt(d) * (x W_gate),
silu(nu) u, GELU gelu(s_nu sqrt(d) * (x W_in)); logits = s_z * (x_L W_U). Each vector is
stored in the paper's scaled parametrization: the parameter starts at ``scale`` and the model
uses param * (init / scale) (alpha: init 0.05, scale 1/sqrt(d), and |.| as in the reference
code; s_qk and s_z: init 1, scale 1/sqrt(d); s_u, s_nu: init 1, scale 1). The weight vectors
along the residual width d (rows of W_E, W_pos, columns of W_U, W_Q, W_K, W_V, W_in, W_gate,
rows of W_O, W_out) are unit vectors: at initialization and again after every optimizer step
(:func:`after_optimizer_step`, :meth:`Transformer.after_optimizer_step`).

Positions: none, learned (``max_len`` slots W_pos) or rotary (``rope=True``: the pairs (2i,
2i+1) of every head's query and key at position p rotated by the angle p 10000^(-2i/d_head), any
length).

Every block has named capture points (``blocks.3.hook_attn_out``, ``blocks.0.attn.hook_pattern``,
listed with their mathematics in :class:`Block`): identity modules that
``with model.capture(pattern, ...) as cache:`` reads (:meth:`Transformer.capture`).

The forward pass uses the parameters through tensor operations only (no ``.item()``, no branch
on their values, no in-place update), so ``torch.func.functional_call`` and ``torch.func.vmap``
run K stacked copies of a model at once.

The single-layer, single-head, attention-only model of the Set Complement theory is this code
with ``n_layers=1, mlp=None, max_len=None``. For placement ``none`` its logits at the last
position are exactly f(t) = B[t_s] + sum_i w_i D[t_i] with B = W_E W_U and D = W_E W_V W_O W_U
(see :meth:`Transformer.logit_matrices`), and the attention scores are
A = W_E W_Q W_K^T W_E^T / sqrt(d_head) (:meth:`Transformer.attention_scores`).
"""
from __future__ import annotations

import fnmatch
import math
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from typing import Callable, Iterator, Mapping, NamedTuple, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from resharpen.experiments.model.dropout import Dropout
from resharpen.experiments.model.hooks import Capture, HookFn, HookPoint, editing_hook, is_hooked
from resharpen.experiments.model.schemes import NORM_GAINS, NORM_KINDS, SCHEMES, Layer, get, unit

Sublayer = Callable[[torch.Tensor], torch.Tensor]


class Parts(NamedTuple):
    """What a residual rule may use of one sublayer besides f: its input norm ``n_in``, its
    output norm ``n_out`` (with its capture points) and nGPT's eigen learning rate ``alpha``
    (the effective vector; None in the other schemes)."""

    n_in: Sublayer
    n_out: Sublayer
    alpha: torch.Tensor | None


Rule = Callable[[torch.Tensor, Sublayer, Parts], torch.Tensor]


MLP_KINDS = (None, "gelu", "swiglu")
ROPE_BASE = 10000.0
NGPT_ALPHA_INIT = 0.05  # the eigen learning rates' initial value (alpha_A, alpha_M)


_LAYERS: dict[tuple[str, int, int], Layer] = {}  # layer_of's memo: one record per layer


def layer_of(norm: str, layer: int, n_layers: int) -> Layer:
    """The :class:`Layer` that scheme ``norm`` puts in layer ``layer`` (0-based) of
    ``n_layers``."""
    key = (norm, layer, n_layers)
    if key not in _LAYERS:
        _LAYERS[key] = get(norm).layer(layer, n_layers)
    return _LAYERS[key]


def after_optimizer_step(cfg: "ModelConfig", params: Mapping[str, torch.Tensor]) -> None:
    """The scheme's step after every optimizer step on ``params`` (name -> tensor, the names of
    ``Transformer.named_parameters()``, of one model or stacked with a leading member axis), in
    place: nGPT re-normalizes its weight vectors (:func:`renormalize_`); the others do nothing."""
    step = get(cfg.norm).after_step
    if step is not None:
        step(params)


def scaled(param: torch.Tensor, init: float, scale: float) -> torch.Tensor:
    """nGPT's scaled parametrization: the stored ``param`` starts at ``scale``; the model uses
    param * (init / scale), which starts at ``init``."""
    return param * (init / scale)


@dataclass(frozen=True)
class ModelConfig:
    """Shapes and switches of a decoder-only transformer (no biases in linear maps)."""

    vocab: int
    d_model: int
    n_layers: int = 1
    n_heads: int = 1
    d_head: int | None = None  # query/key width per head (default d_model // n_heads)
    d_value: int | None = None  # value width per head (default d_head)
    norm: str = "none"  # the normalization scheme, a key of schemes.SCHEMES
    norm_kind: str = "rms"
    mlp: str | None = None  # None (attention only) | "gelu" | "swiglu"
    d_mlp: int | None = None  # MLP hidden width (default 4 d_model)
    max_len: int | None = None  # learned positional embeddings when set; None = no positions
    attn_dropout: float = 0.0
    resid_dropout: float = 0.0
    eps: float = 1e-6  # norm epsilon; constructions use 0 for exact arithmetic
    init_std: float = 0.02
    # the init std of the token and position embeddings W_E, W_pos (None: init_std): the size of
    # the tokens entering the first block, |x_0| ~ embed_std sqrt(2 d) with learned positions
    embed_std: float | None = None
    attn_out_scale: float = 1.0  # W_O's init is scaled by this (post: K = lambda/beta grows with it)
    # a fixed, untrained factor c on every attention sublayer's output, f = c P h W_V W_O (the
    # map the residual sees is c W_V W_O: Attention.value_output); 1 leaves the model as it was
    attn_out_multiplier: float = 1.0
    norm_gain: str = "learned"  # "learned" | "frozen" (every norm without gain or bias)
    rope: bool = False  # rotary positions on queries and keys (then max_len is None)

    def __post_init__(self) -> None:
        def need(ok: bool, message: str) -> None:
            if not ok:
                raise ValueError(message)

        for name in ("vocab", "d_model", "n_layers", "n_heads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be a positive integer, got "
                                f"{type(value).__name__} {value!r}")
            need(value >= 1, f"{name} must be a positive integer, got {value!r}")
        for name in ("eps", "init_std", "attn_out_scale", "attn_out_multiplier", "attn_dropout",
                     "resid_dropout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
            need(math.isfinite(value), f"{name} must be finite, got {value!r}")
        need(self.vocab >= 2, f"vocab must be >= 2, got {self.vocab}")
        need(self.norm in SCHEMES,
             f"norm placement {self.norm!r} is not one of {', '.join(SCHEMES)}")
        need(self.norm_kind in NORM_KINDS,
             f"norm kind {self.norm_kind!r} is not one of {', '.join(NORM_KINDS)}")
        need(self.norm_gain in NORM_GAINS,
             f"norm gain {self.norm_gain!r} is not one of {', '.join(NORM_GAINS)}")
        need(self.mlp in MLP_KINDS, f"mlp {self.mlp!r} is not one of None, 'gelu', 'swiglu'")
        for name in ("d_head", "d_value", "d_mlp", "max_len"):
            value = getattr(self, name)
            need(value is None or (isinstance(value, int) and value >= 1),
                 f"{name} must be a positive integer or None, got {value!r}")
        if self.d_head is None:
            need(self.d_model % self.n_heads == 0,
                 f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                 "set d_head explicitly")
        for name in ("attn_dropout", "resid_dropout"):
            value = getattr(self, name)
            need(0.0 <= value < 1.0, f"{name} must be in [0, 1), got {value!r}")
        need(self.eps >= 0.0, f"eps must be >= 0, got {self.eps!r}")
        need(self.init_std > 0.0, f"init_std must be > 0, got {self.init_std!r}")
        if self.embed_std is not None:
            need(not isinstance(self.embed_std, bool)
                 and isinstance(self.embed_std, (int, float))
                 and math.isfinite(self.embed_std) and self.embed_std > 0.0,
                 f"embed_std must be a number > 0 or None, got {self.embed_std!r}")
        need(self.attn_out_scale > 0.0,
             f"attn_out_scale must be > 0, got {self.attn_out_scale!r}")
        need(self.attn_out_multiplier > 0.0,
             f"attn_out_multiplier must be > 0, got {self.attn_out_multiplier!r}")
        need(isinstance(self.rope, bool), f"rope must be True or False, got {self.rope!r}")
        need(not (self.rope and self.max_len is not None),
             f"positions are one of none, learned (max_len) or rope; rope=True takes "
             f"max_len=None, got max_len={self.max_len}")
        need(not self.rope or self.head_width % 2 == 0,
             f"rope rotates pairs of query/key coordinates: d_head must be even, got "
             f"d_head={self.head_width}; allowed: an even d_head, or no rope")

    @property
    def head_width(self) -> int:
        return self.d_head if self.d_head is not None else self.d_model // self.n_heads

    @property
    def value_width(self) -> int:
        return self.d_value if self.d_value is not None else self.head_width

    @property
    def mlp_width(self) -> int:
        return self.d_mlp if self.d_mlp is not None else 4 * self.d_model

    @property
    def positional(self) -> str:
        """"none", "learned" (``max_len`` slots) or "rope"."""
        return "learned" if self.max_len is not None else "rope" if self.rope else "none"

    def parameter_estimate(self) -> int:
        """About the number of parameters of the Transformer this config builds (embeddings,
        unembedding, positions, each layer's attention, MLP and norms:
        :func:`resharpen.experiments.common.limits.transformer_params`; the norms and nGPT's
        scale vectors are counted roughly: within a few per cent of small models, exact in the
        terms that grow fastest)."""
        from resharpen.experiments.common.limits import transformer_params

        return transformer_params(self.vocab, self.d_model, self.n_layers, self.n_heads,
                                  self.head_width, self.mlp_width if self.mlp else 0,
                                  self.mlp == "swiglu", self.max_len or 0) + \
            2 * self.n_layers * self.n_heads * self.d_model * (self.value_width - self.head_width)

    def memory_estimate(self) -> int:
        """Bytes a float32 Transformer of this config takes while it is built: its parameters
        and the largest weight's initialization temporary (the draw before it is scaled),
        4 (params + max(v d, d d_mlp, h d max(d_head, d_value)))."""
        largest = max(self.vocab * self.d_model,
                      self.d_model * (self.mlp_width if self.mlp else 0),
                      self.n_heads * self.d_model * max(self.head_width, self.value_width))
        return 4 * (self.parameter_estimate() + largest)

    def to_dict(self) -> dict:
        """The fields as a dict; ``embed_std`` is left out at its default (None), so the configs
        written before it existed read back, and compare, unchanged."""
        data = asdict(self)
        if data["embed_std"] is None:
            del data["embed_std"]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "ModelConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown model config keys {unknown}; allowed: {sorted(known)}")
        return cls(**data)


class Norm(nn.Module):
    """RMSNorm  N(x) = g * x / sqrt(mean(x^2) + eps)   or
    LayerNorm N(x) = g * (x - mean x) / sqrt(var x + eps) + b, over the last axis;
    ``learned=False``: g = 1 and b = 0, no parameters.

    With eps = 0 (the constructions' exact arithmetic) the formula is 0/0 on a vector whose
    mean square (RMSNorm) or variance (LayerNorm) is 0, such as an ablated, all-zero attention
    output; there N(x) is defined as 0 (RMSNorm) and b (LayerNorm: g * 0 + b), the limit along
    x = t u as t -> 0 of x / sqrt(mean(x^2) + eps) for any eps > 0, instead of NaN. Every other
    vector gets the formula's value, bit for bit."""

    def __init__(self, width: int, kind: str, eps: float, learned: bool = True):
        super().__init__()
        self.kind, self.eps = kind, eps
        self.gain = nn.Parameter(torch.ones(width)) if learned else None
        self.bias = nn.Parameter(torch.zeros(width)) if kind == "layer" and learned else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = (x.shape[-1],)
        if self.kind == "rms":
            out = F.rms_norm(x, shape, self.gain, self.eps)
        else:
            out = F.layer_norm(x, shape, self.gain, self.bias, self.eps)
        if self.eps > 0:
            return out
        centred = x if self.kind == "rms" else x - x.mean(-1, keepdim=True)
        flat = (centred == 0).all(-1, keepdim=True)  # 0/0: N is 0 (RMS) or the bias (layer)
        zero = torch.zeros((), dtype=out.dtype, device=out.device)
        return torch.where(flat, zero if self.bias is None else self.bias, out)


def rotary(x: torch.Tensor) -> torch.Tensor:
    """RoPE on (..., seq, e), e even: the pair (x_2i, x_2i+1) at position p rotated by the angle
    p * 10000^(-2i/e). The angles are computed for this length (any length; float64 for a
    float64 x, else float32)."""
    n, e = x.shape[-2], x.shape[-1]
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    freq = ROPE_BASE ** (-torch.arange(0, e, 2, dtype=dtype, device=x.device) / e)
    angle = torch.arange(n, dtype=dtype, device=x.device)[:, None] * freq  # (seq, e/2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


@dataclass(frozen=True)
class TokenRows:
    """Where a (batch, seq, d) activation's rows are functions of the token alone (the first
    block's attention input without learned positions: W_E[t], N(W_E[t]), ...): ``first`` (u,)
    a flat position holding each of u table rows (the first occurrence of each vocabulary
    token; any position for a token that does not occur, whose row no position reads),
    ``inverse`` (batch, seq) each position's table row (its token)
    (:meth:`Transformer.token_rows`)."""

    first: torch.Tensor
    inverse: torch.Tensor


def project(x: torch.Tensor, weights: Sequence[torch.Tensor], rows: TokenRows | None = None
            ) -> list[torch.Tensor]:
    """x W^h for every W (H, d, e_W) of ``weights`` and head h: x (batch, seq, d) ->
    [(batch, H, seq, e_W)]. With ``rows`` (x's rows equal wherever their tokens are): the u
    table rows are projected once and gathered back, (x W)[b, s] = (x[first] W)[inverse[b, s]]:
    the same products in exact arithmetic (the forward bit for bit here, the gradient up to
    float32 rounding: every position's gradient still reaches x through its token's row),
    u x d x e multiply-adds per W in place of batch x seq x d x e."""
    if rows is None:
        return [torch.einsum("bsd,hde->bhse", x, W) for W in weights]
    distinct = x.reshape(-1, x.shape[-1]).index_select(0, rows.first)  # (u, d)
    return [F.embedding(rows.inverse, torch.einsum("ud,hde->uhe", distinct, W).flatten(1))
            .unflatten(-1, W.shape[::2]).transpose(1, 2) for W in weights]


class Attention(nn.Module):
    """Causal multi-head attention with weights W_Q, W_K: (H, d, d_head), W_V: (H, d, d_value),
    W_O: (H, d_value, d); with RoPE (``cfg.rope``) on q and k; nGPT (``sphere``): q and k
    normalized per head and scaled by s_qk (H, d_head), softmax scale sqrt(d_head). The output
    is multiplied by the fixed (untrained) ``cfg.attn_out_multiplier`` c (1: no multiplication),
    so the value-output map the residual sees is c W_V W_O (:meth:`value_output`)."""

    def __init__(self, cfg: ModelConfig, sphere: bool = False):
        super().__init__()
        h, d, dk, dv = cfg.n_heads, cfg.d_model, cfg.head_width, cfg.value_width
        self.W_Q = nn.Parameter(torch.randn(h, d, dk) * cfg.init_std)
        self.W_K = nn.Parameter(torch.randn(h, d, dk) * cfg.init_std)
        self.W_V = nn.Parameter(torch.randn(h, d, dv) * cfg.init_std)
        W_O = torch.randn(h, dv, d) * cfg.init_std / math.sqrt(2 * cfg.n_layers)
        if cfg.attn_out_scale != 1.0:  # the default leaves the init (and its numbers) unchanged
            W_O = W_O * cfg.attn_out_scale
        self.W_O = nn.Parameter(W_O)
        self.out_multiplier = cfg.attn_out_multiplier
        self.sphere_scale = 1.0 / math.sqrt(d)  # nGPT's s_qk: init 1, scale 1/sqrt(d)
        self.s_qk = nn.Parameter(torch.full((h, dk), self.sphere_scale)) if sphere else None
        self.rope = cfg.rope
        self.dropout = Dropout(cfg.attn_dropout)
        self.scale = math.sqrt(dk) if sphere else 1.0 / math.sqrt(dk)
        self.hook_pattern = HookPoint()

    def scores(self, x: torch.Tensor, rows: "TokenRows | None" = None) -> torch.Tensor:
        """The attention logits (batch, heads, seq, seq), scaled, before the causal mask.
        ``rows``: x's rows are functions of their tokens (:class:`TokenRows`)."""
        q, k = project(x, (self.W_Q, self.W_K), rows)
        return self._scores(q, k)

    def _scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        if self.rope:
            q, k = rotary(q), rotary(k)
        if self.s_qk is not None:  # nGPT: q, k per head on the sphere, scaled by s_qk
            s_qk = scaled(self.s_qk, 1.0, self.sphere_scale)[:, None, :]
            q, k = s_qk * unit(q), s_qk * unit(k)
        return torch.einsum("bhqe,bhke->bhqk", q, k) * self.scale

    fold_value_output = True
    """Whether one head reading token rows folds W_V W_O into the token table (:meth:`forward`;
    False: the product as it was before, for benchmarks/bench_train_step.py and the tests)."""

    def forward(self, x: torch.Tensor, rows: "TokenRows | None" = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """(sum_h P_h x W_V^h W_O^h, the pattern P). With ``rows`` and one head, the value-output
        map is folded into the token table: P (x W_V) W_O = P (x W_V W_O), and x W_V W_O is
        projected for the v vocabulary rows only (:func:`project`), so no (batch x seq) x d x d
        product is left; the same numbers in exact arithmetic, float32 rounding apart."""
        fold = self.fold_value_output and rows is not None and self.W_V.shape[0] == 1
        value = torch.matmul(self.W_V, self.W_O) if fold else self.W_V  # (H, d, d) folded
        q, k, v = project(x, (self.W_Q, self.W_K, value), rows)
        scores = self._scores(q, k)
        n = x.shape[1]
        causal = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
        weights = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        weights = self.hook_pattern(weights)
        mixed = torch.einsum("bhqk,bhke->bhqe", self.dropout(weights), v)
        out = mixed[:, 0] if fold else torch.einsum("bhqe,hed->bqd", mixed, self.W_O)
        if self.out_multiplier != 1.0:  # the default computes exactly what it did before
            out = out * self.out_multiplier
        return out, weights

    def value_output(self, head: int = 0) -> torch.Tensor:
        """Head ``head``'s value-output map as the residual sees it: c W_V W_O (d x d), c the
        fixed ``attn_out_multiplier`` (W_V W_O itself when c = 1)."""
        M = self.W_V[head] @ self.W_O[head]
        return M if self.out_multiplier == 1.0 else M * self.out_multiplier


class MLP(nn.Module):
    """GELU: gelu(x W_in) W_out.  SwiGLU: (silu(x W_gate) * x W_in) W_out.
    nGPT (``sphere``): the pre-activations scaled, SwiGLU u = s_u * (x W_in) and
    nu = s_nu sqrt(d) * (x W_gate), GELU gelu(s_nu sqrt(d) * (x W_in)); s_u, s_nu of width d_mlp."""

    def __init__(self, cfg: ModelConfig, sphere: bool = False):
        super().__init__()
        d, m = cfg.d_model, cfg.mlp_width
        self.kind = cfg.mlp
        self.W_in = nn.Parameter(torch.randn(d, m) * cfg.init_std)
        self.W_gate = nn.Parameter(torch.randn(d, m) * cfg.init_std) if cfg.mlp == "swiglu" else None
        self.W_out = nn.Parameter(torch.randn(m, d) * cfg.init_std / math.sqrt(2 * cfg.n_layers))
        # nGPT's scalings (init 1, scale 1); nu's also times sqrt(d)
        self.s_u = nn.Parameter(torch.ones(m)) if sphere and cfg.mlp == "swiglu" else None
        self.s_nu = nn.Parameter(torch.ones(m)) if sphere else None
        self.nu_scale = math.sqrt(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = x @ self.W_in
        if self.s_nu is None:
            hidden = F.silu(x @ self.W_gate) * hidden if self.kind == "swiglu" else F.gelu(hidden)
        elif self.kind == "swiglu":  # nGPT: silu(nu) * u
            nu = self.s_nu * self.nu_scale * (x @ self.W_gate)
            hidden = F.silu(nu) * (self.s_u * hidden)
        else:
            hidden = F.gelu(self.s_nu * self.nu_scale * hidden)
        return hidden @ self.W_out


class Block(nn.Module):
    """Layer ``layer`` (0-based): x <- rule(x, attention), then x <- rule(x, MLP), with the rule
    its scheme gives this layer (:func:`layer_of`).

    Capture points (as TransformerLens's hook points), in the order they fire, with x the block
    input, f_attn and f_mlp the sublayers (residual dropout included), N_in and N_out a sublayer's
    input and output norms; every one is (batch, seq, d_model) except the attention pattern:

        hook_resid_pre             x
        hook_attn_in               h: what attention reads, N_in(x) (pre, pre_nofinal, peri,
                                   mixln's Pre-LN layers), N_in(x) / sqrt(l + 1) (ln_scaling),
                                   else x
        attn.hook_pattern          P = softmax(h W_Q (h W_K)^T / sqrt(d_head) + causal mask),
                                   (batch, heads, seq, seq), each row summing to 1 (q and k
                                   rotated under RoPE; nGPT's normalized q, k and scale)
        hook_attn_out              f_attn(h) = sum_heads P h W_V W_O
        hook_attn_norm_out_input   what N_out receives: x + f_attn(h) (post, mixln's Post-LN
                                   layers), f_attn(h) (attn_out, peri)  [layers with N_out]
        hook_attn_norm_out_output  N_out of it                          [layers with N_out]
        hook_resid_mid             x' = rule(x, f_attn): the residual between the sublayers [MLP]
        hook_mlp_in, hook_mlp_out, hook_mlp_norm_out_input, hook_mlp_norm_out_output
                                   the same four points of the MLP sublayer acting on x'     [MLP]
        hook_resid_post            the block output: x' = rule(x', f_mlp) with an MLP, else x'

    A point in brackets exists only in blocks that have that part, so every point fires."""

    def __init__(self, cfg: ModelConfig, layer: int = 0):
        super().__init__()
        self.placement, self.layer, self.n_layers = cfg.norm, layer, cfg.n_layers
        rule = layer_of(cfg.norm, layer, cfg.n_layers)
        sphere = get(cfg.norm).sphere
        self.alpha_scale = 1.0 / math.sqrt(cfg.d_model)  # nGPT's alpha: init 0.05, scale 1/sqrt(d)

        def norm(used: bool) -> nn.Module:
            return (Norm(cfg.d_model, cfg.norm_kind, cfg.eps, cfg.norm_gain == "learned")
                    if used else nn.Identity())

        def eigen_rate() -> nn.Parameter | None:
            return nn.Parameter(torch.full((cfg.d_model,), self.alpha_scale)) \
                if rule.eigen_rate else None

        has_out = rule.output_norm is not None
        self.attn = Attention(cfg, sphere)
        self.attn_norm_in, self.attn_norm_out = norm(rule.input_norm), norm(has_out)
        self.attn_alpha = eigen_rate()
        self.mlp = MLP(cfg, sphere) if cfg.mlp else None
        if self.mlp is not None:
            self.mlp_norm_in, self.mlp_norm_out = norm(rule.input_norm), norm(has_out)
            self.mlp_alpha = eigen_rate()
        self.dropout = Dropout(cfg.resid_dropout)
        # capture points: identity modules, so parameter names and state_dict keys are unchanged
        self.hook_resid_pre = HookPoint()
        self.hook_attn_in, self.hook_attn_out = HookPoint(), HookPoint()
        if has_out:
            self.hook_attn_norm_out_input, self.hook_attn_norm_out_output = HookPoint(), HookPoint()
        if self.mlp is not None:
            self.hook_resid_mid = HookPoint()
            self.hook_mlp_in, self.hook_mlp_out = HookPoint(), HookPoint()
            if has_out:
                self.hook_mlp_norm_out_input = HookPoint()
                self.hook_mlp_norm_out_output = HookPoint()
        self.hook_resid_post = HookPoint()

    @property
    def rule(self) -> Rule:
        """This layer's residual rule."""
        return layer_of(self.placement, self.layer, self.n_layers).rule

    def forward(self, x: torch.Tensor, rows: TokenRows | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """(block output, attention pattern P). ``rows``: x's rows are functions of their
        tokens (:class:`TokenRows`), and so is what attention reads (N_in acts row by row)."""
        rule, pattern = self.rule, []

        def attention(h: torch.Tensor) -> torch.Tensor:
            out, weights = self.attn(self.hook_attn_in(h), rows)
            pattern.append(weights)
            return self.hook_attn_out(self.dropout(out))

        def mlp(h: torch.Tensor) -> torch.Tensor:
            return self.hook_mlp_out(self.dropout(self.mlp(self.hook_mlp_in(h))))

        x = rule(self.hook_resid_pre(x), attention,
                 Parts(self.attn_norm_in, self._attn_norm_out, self._eigen_rate(self.attn_alpha)))
        if self.mlp is not None:
            x = rule(self.hook_resid_mid(x), mlp,
                     Parts(self.mlp_norm_in, self._mlp_norm_out, self._eigen_rate(self.mlp_alpha)))
        return self.hook_resid_post(x), pattern[0]

    # the output norms with their capture points; only layers with an N_out call them
    def _attn_norm_out(self, y: torch.Tensor) -> torch.Tensor:
        return self.hook_attn_norm_out_output(self.attn_norm_out(self.hook_attn_norm_out_input(y)))

    def _mlp_norm_out(self, y: torch.Tensor) -> torch.Tensor:
        return self.hook_mlp_norm_out_output(self.mlp_norm_out(self.hook_mlp_norm_out_input(y)))

    def _eigen_rate(self, param: torch.Tensor | None) -> torch.Tensor | None:
        """nGPT's alpha = |param| * (0.05 / (1/sqrt(d))) (the |.| of the reference code)."""
        return None if param is None else scaled(param, NGPT_ALPHA_INIT, self.alpha_scale).abs()


class Transformer(nn.Module):
    """Decoder-only transformer; ``forward(tokens) -> logits`` of shape (batch, seq, vocab).

    ``Transformer(ModelConfig(vocab, d_model, norm=..., ...))``: the placement of the norms is
    ``cfg.norm``, an entry of the scheme registry (:mod:`resharpen.experiments.model.schemes`). Every block has named capture points
    (:meth:`hook_points`; their mathematics in :class:`Block`), read with :meth:`capture` and
    read or edited with :meth:`run_with_hooks`. For the one-layer, one-head, attention-only
    model of the theory, :meth:`logit_matrices` gives B and D and :meth:`attention_scores` A."""

    def __init__(self, cfg: ModelConfig):
        if not isinstance(cfg, ModelConfig):
            raise TypeError(f"cfg must be a ModelConfig, got {type(cfg).__name__}")
        if torch.empty(0).device.type != "meta":  # the meta device allocates nothing
            from resharpen.experiments.common.limits import require_large

            require_large(cfg.memory_estimate(),
                          f"a Transformer of vocab {cfg.vocab}, d_model {cfg.d_model}, "
                          f"{cfg.n_layers} layer(s) ({cfg.parameter_estimate():.3g} parameters)")
        super().__init__()
        self.cfg = cfg
        embed_std = cfg.init_std if cfg.embed_std is None else cfg.embed_std
        self.W_E = nn.Parameter(torch.randn(cfg.vocab, cfg.d_model) * embed_std)
        self.W_pos = (nn.Parameter(torch.randn(cfg.max_len, cfg.d_model) * embed_std)
                      if cfg.max_len else None)
        self.blocks = nn.ModuleList(Block(cfg, layer) for layer in range(cfg.n_layers))
        placement = get(cfg.norm)
        self.final_norm = (Norm(cfg.d_model, cfg.norm_kind, cfg.eps, cfg.norm_gain == "learned")
                           if placement.final_norm else nn.Identity())
        self.W_U = nn.Parameter(torch.randn(cfg.d_model, cfg.vocab) * cfg.init_std)
        self.sphere = placement.sphere
        self.sphere_scale = 1.0 / math.sqrt(cfg.d_model)  # nGPT's s_z: init 1, scale 1/sqrt(d)
        self.s_z = nn.Parameter(torch.full((cfg.vocab,), self.sphere_scale)) if self.sphere \
            else None
        for site, module in enumerate(m for m in self.modules() if isinstance(m, Dropout)):
            module.site = site  # each dropout draws its own stream of masks
        self.after_optimizer_step()  # nGPT starts with its weight vectors on the sphere

    def token_rows(self, tokens: torch.Tensor) -> TokenRows | None:
        """:class:`TokenRows` of the first block's input when its attention may project each
        vocabulary token once: no learned positions (x_0 = W_E[t], on the sphere for nGPT; N_in
        acts row by row; RoPE rotates after the projection), no hook before the attention's
        input that could make equal tokens' rows differ or ask for a gradient at each position
        (capture, probes, edits), and at most half as many vocabulary tokens as positions
        (else the dense product is as cheap). None otherwise. Shapes are fixed by v, so the
        stacked members of :mod:`resharpen.experiments.training.engine` take it under ``vmap``."""
        first_block = self.blocks[0] if len(self.blocks) else None
        if (first_block is None or self.W_pos is not None or tokens.dim() != 2
                or 2 * self.cfg.vocab > tokens.numel()
                or is_hooked(first_block.hook_resid_pre, first_block.hook_attn_in,
                           first_block.attn_norm_in)):
            return None
        flat = tokens.reshape(-1)
        positions = torch.arange(flat.numel(), device=flat.device)
        first = torch.zeros(self.cfg.vocab, dtype=positions.dtype, device=flat.device)
        first = first.scatter_reduce(0, flat, positions, reduce="amin", include_self=False)
        return TokenRows(first, tokens)

    def residual(self, tokens: torch.Tensor) -> torch.Tensor:
        """The input residual stream W_E[t] (+ W_pos), on the unit sphere for nGPT."""
        check_tokens(tokens, self.cfg.vocab, self.cfg.max_len)
        x = self.W_E[tokens]
        if self.W_pos is not None:
            x = x + self.W_pos[: tokens.shape[1]]
        return unit(x) if self.sphere else x

    def forward(self, tokens: torch.Tensor, return_attention: bool = False):
        x = self.residual(tokens)
        attention = []
        rows = self.token_rows(tokens)
        for block in self.blocks:
            x, weights = block(x, rows)
            attention.append(weights)
            rows = None  # past the first attention, rows mix their positions
        logits = self.final_norm(x) @ self.W_U
        if self.s_z is not None:  # nGPT's logit scale
            logits = logits * scaled(self.s_z, 1.0, self.sphere_scale)
        return (logits, attention) if return_attention else logits

    def set_dropout_key(self, key: int) -> None:
        """Every dropout's mask key (:class:`.dropout.Dropout`; -1: ``F.dropout``'s own draws)."""
        for module in self.modules():
            if isinstance(module, Dropout):
                module.key.fill_(key)

    def has_dropout(self) -> bool:
        """Whether any of the model's dropout rates is above 0."""
        return any(isinstance(m, Dropout) and m.p > 0 for m in self.modules())

    def after_optimizer_step(self) -> None:
        """The scheme's step after an optimizer step, on this model's parameters
        (:func:`after_optimizer_step`: nGPT re-normalizes its weight vectors)."""
        after_optimizer_step(self.cfg, dict(self.named_parameters()))

    # -- named capture points ---------------------------------------------------------------
    def hook_points(self) -> dict[str, HookPoint]:
        """Every capture point by name, e.g. ``blocks.0.hook_attn_out`` (see :class:`Block`)."""
        return {name: module for name, module in self.named_modules()
                if isinstance(module, HookPoint)}

    def _matching(self, pattern: str | Callable[[str], bool]) -> dict[str, HookPoint]:
        """The capture points named by ``pattern``: an exact name, a shell-style pattern
        (``blocks.*.hook_attn_out``) or a predicate on the name. ValueError if none matches."""
        points = self.hook_points()
        if callable(pattern):
            matched = {name: point for name, point in points.items() if pattern(name)}
        elif isinstance(pattern, str):
            matched = {name: point for name, point in points.items()
                       if fnmatch.fnmatchcase(name, pattern)}
        else:
            raise TypeError(f"a hook point pattern is a name, a shell-style pattern or a "
                            f"predicate on names, got {type(pattern).__name__}")
        if not matched:
            raise ValueError(f"hook point pattern {pattern!r} matches no capture point of this "
                             f"model; its points are {', '.join(points)}")
        return matched

    @contextmanager
    def hooks(self, fwd_hooks: Sequence[tuple[str | Callable[[str], bool], HookFn]] = ()
              ) -> Iterator["Transformer"]:
        """While open, each ``(pattern, fn)`` of ``fwd_hooks`` runs at every capture point the
        pattern names (:meth:`run_with_hooks`); the hooks are removed on exit, also after an
        error. ValueError for a pattern that names no point, before any hook is added."""
        chosen = [(name, point, fn) for pattern, fn in fwd_hooks
                  for name, point in self._matching(pattern).items()]
        handles = []
        try:
            for name, point, fn in chosen:
                handles.append(point.register_forward_hook(editing_hook(name, fn)))
            yield self
        finally:
            for handle in handles:
                handle.remove()

    def run_with_hooks(self, tokens: torch.Tensor,
                       fwd_hooks: Sequence[tuple[str | Callable[[str], bool], HookFn]] = (),
                       return_attention: bool = False):
        """:meth:`forward` with hooks that read and edit activations (TransformerLens's call).

        ``fwd_hooks``: pairs ``(pattern, fn)``; ``pattern`` names capture points (an exact
        name such as ``blocks.0.attn.hook_pattern``, a shell-style pattern such as
        ``blocks.*.hook_attn_out``, or a predicate on the name; :meth:`hook_points` lists them
        and :class:`Block` gives their mathematics). At each such point ``fn(activation, name)``
        is called with the tensor that passes there; it may return a replacement of the same
        shape, which the model then uses in place of the activation (None keeps it). Hooks run
        in the order given; the model, its parameters and its state dict are unchanged
        afterwards (the hooks are removed, also after an error). Example, the query's attention
        pattern zeroed (its attention output is then 0)::

            def ablate(pattern, name):
                pattern = pattern.clone()
                pattern[:, :, -1, :] = 0.0      # (batch, heads, query, key): the last query's row
                return pattern

            logits = model.run_with_hooks(tokens, [("blocks.0.attn.hook_pattern", ablate)])

        ValueError for a pattern that names no capture point, or a replacement of another shape."""
        with self.hooks(fwd_hooks):
            return self(tokens, return_attention=return_attention)

    def capture(self, *patterns: str, retain_grad: bool = False) -> Capture:
        """Record the capture points whose names match any of the shell-style ``patterns``
        (every point if none is given) while the blocks run, directly or through
        :meth:`forward`::

            with model.capture("blocks.*.hook_attn_out", "blocks.0.attn.hook_pattern") as cache:
                model(tokens)
            cache["blocks.1.hook_attn_out"]

        ``retain_grad``: the captured tensors keep their gradients (:class:`.hooks.Capture`).
        ValueError for a pattern that matches no capture point of this model."""
        points = self.hook_points()
        chosen = dict(points) if not patterns else {}
        for pattern in patterns:
            matched = {name: point for name, point in points.items()
                       if fnmatch.fnmatchcase(name, pattern)}
            if not matched:
                raise ValueError(f"capture pattern {pattern!r} matches no capture point of this "
                                 f"model; its points are {', '.join(points)}")
            chosen.update(matched)
        return Capture(chosen, retain_grad)

    # -- the quantities of the one-layer theory ------------------------------------------
    def _single_head(self) -> Attention:
        if self.cfg.n_layers != 1 or self.cfg.n_heads != 1 or self.cfg.mlp:
            raise ValueError("B, D and A are defined for the one-layer, one-head, attention-only "
                             f"model; this one has n_layers={self.cfg.n_layers}, "
                             f"n_heads={self.cfg.n_heads}, mlp={self.cfg.mlp!r}")
        return self.blocks[0].attn

    @torch.no_grad()
    def logit_matrices(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, D) with B = W_E W_U (direct path) and D = W_E W_V W_O W_U (logit displacement;
        times ``attn_out_multiplier`` c when c != 1: :meth:`Attention.value_output`)."""
        attn = self._single_head()
        B = self.W_E @ self.W_U
        D = self.W_E @ attn.W_V[0] @ attn.W_O[0] @ self.W_U
        if attn.out_multiplier != 1.0:
            D = D * attn.out_multiplier
        return B, D

    @torch.no_grad()
    def attention_scores(self) -> torch.Tensor:
        """A = W_E W_Q W_K^T W_E^T / sqrt(d_head): row q, column k is the score of key k."""
        attn = self._single_head()
        if self.cfg.rope or self.sphere:
            raise ValueError("A is the position-free score of plain attention; this model has "
                             f"rope={self.cfg.rope}, norm={self.cfg.norm!r}")
        return (self.W_E @ attn.W_Q[0]) @ (self.W_E @ attn.W_K[0]).T * attn.scale


def check_tokens(tokens: torch.Tensor, vocab: int, max_len: int | None = None) -> None:
    """ValueError unless ``tokens`` is an integer (batch, seq) tensor with entries in [0, vocab)."""
    if not isinstance(tokens, torch.Tensor):
        raise TypeError(f"tokens must be a torch.Tensor, got {type(tokens).__name__}")
    if tokens.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise ValueError(f"tokens must have an integer dtype, got {tokens.dtype}")
    if tokens.dim() != 2 or tokens.shape[1] < 1:
        raise ValueError(f"tokens must have shape (batch, seq >= 1), got {tuple(tokens.shape)}")
    # inside torch.func.vmap (the ensemble engine) the values are checked before, on the stack
    if tokens.numel() and not torch._C._functorch.is_functorch_wrapped_tensor(tokens) and (
            int(tokens.min()) < 0 or int(tokens.max()) >= vocab):
        raise ValueError(f"tokens must lie in [0, {vocab - 1}], got values in "
                         f"[{int(tokens.min())}, {int(tokens.max())}]")
    if max_len is not None and tokens.shape[1] > max_len:
        raise ValueError(f"sequence length {tokens.shape[1]} exceeds max_len={max_len}")
