"""The transformer: one config dataclass and one block whose norm placement is a table entry.

Notation (rows are tokens; weights act on the right, as in the theory):
    x_0 = W_E[t] (+ W_pos[position])                      residual stream, width d
    f(x) = sum_h softmax(x W_Q^h (x W_K^h)^T / sqrt(d_head) + causal mask) x W_V^h W_O^h
    logits = N_final(x_L) W_U                               (N_final only for pre and peri)

Each sublayer f (attention, then the optional MLP) is wrapped by its norm placement, one record
of the table :data:`PLACEMENTS` (:class:`Placement`: its norms, its final norm, its rule), with
N = RMSNorm or LayerNorm (learnable gain; LayerNorm also a bias):
    none      x + f(x)
    pre       x + f(N(x))            and a final N before W_U
    post      N(x + f(x))
    attn_out  x + N(f(x))
    peri      x + N(f(N(x)))         and a final N before W_U

Every block has named capture points (``blocks.3.hook_attn_out``, ``blocks.0.attn.hook_pattern``,
listed with their mathematics in :class:`Block`): identity modules that
``with model.capture(pattern, ...) as cache:`` reads (:meth:`Transformer.capture`).

The single-layer, single-head, attention-only model of the Set Complement theory is this code
with ``n_layers=1, mlp=None, max_len=None``. For placement ``none`` its logits at the last
position are exactly f(t) = B[t_s] + sum_i w_i D[t_i] with B = W_E W_U and D = W_E W_V W_O W_U
(see :meth:`Transformer.logit_matrices`), and the attention scores are
A = W_E W_Q W_K^T W_E^T / sqrt(d_head) (:meth:`Transformer.attention_scores`).
"""
from __future__ import annotations

import fnmatch
import math
from dataclasses import asdict, dataclass, fields
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from resharpen.experiments.core.train_config import NORM_KINDS, NORM_PLACEMENTS

Sublayer = Callable[[torch.Tensor], torch.Tensor]
Rule = Callable[[torch.Tensor, Sublayer, Sublayer, Sublayer], torch.Tensor]


@dataclass(frozen=True)
class Placement:
    """One norm placement: where its norms go and the residual update it makes of a sublayer.

    ``rule(x, f, n_in, n_out)`` is the new residual made from the residual x, the sublayer f and
    the sublayer's input and output norms; a block applies it twice, to attention and to the MLP
    (nanoGPT's two lines). ``input_norm``: an N before f. ``output_norm``: None, ``"branch"``
    (N on f's output, x + N(f)) or ``"residual"`` (N on the sum, N(x + f)). ``final_norm``: an
    N_final before W_U."""

    name: str
    input_norm: bool
    output_norm: str | None
    final_norm: bool
    rule: Rule


# The norm placements, made visible: x is the residual, f the sublayer, n_in / n_out its norms.
PLACEMENTS: dict[str, Placement] = {p.name: p for p in (
    Placement("none", input_norm=False, output_norm=None, final_norm=False,
              rule=lambda x, f, n_in, n_out: x + f(x)),
    Placement("pre", input_norm=True, output_norm=None, final_norm=True,
              rule=lambda x, f, n_in, n_out: x + f(n_in(x))),
    Placement("post", input_norm=False, output_norm="residual", final_norm=False,
              rule=lambda x, f, n_in, n_out: n_out(x + f(x))),
    Placement("attn_out", input_norm=False, output_norm="branch", final_norm=False,
              rule=lambda x, f, n_in, n_out: x + n_out(f(x))),
    Placement("peri", input_norm=True, output_norm="branch", final_norm=True,
              rule=lambda x, f, n_in, n_out: x + n_out(f(n_in(x)))),
)}
if tuple(PLACEMENTS) != NORM_PLACEMENTS:  # the config's names are this table's keys
    raise ImportError(f"PLACEMENTS {tuple(PLACEMENTS)} disagree with the config's "
                      f"NORM_PLACEMENTS {NORM_PLACEMENTS}")
MLP_KINDS = (None, "gelu", "swiglu")


@dataclass(frozen=True)
class ModelConfig:
    """Shapes and switches of a decoder-only transformer (no biases in linear maps)."""

    vocab: int
    d_model: int
    n_layers: int = 1
    n_heads: int = 1
    d_head: int | None = None  # query/key width per head (default d_model // n_heads)
    d_value: int | None = None  # value width per head (default d_head)
    norm: str = "none"
    norm_kind: str = "rms"
    mlp: str | None = None  # None (attention only) | "gelu" | "swiglu"
    d_mlp: int | None = None  # MLP hidden width (default 4 d_model)
    max_len: int | None = None  # learned positional embeddings when set; None = no positions
    attn_dropout: float = 0.0
    resid_dropout: float = 0.0
    eps: float = 1e-6  # norm epsilon; constructions use 0 for exact arithmetic
    init_std: float = 0.02
    attn_out_scale: float = 1.0  # W_O's init is scaled by this (post: K = lambda/beta grows with it)

    def __post_init__(self) -> None:
        def need(ok: bool, message: str) -> None:
            if not ok:
                raise ValueError(message)

        for name in ("vocab", "d_model", "n_layers", "n_heads"):
            value = getattr(self, name)
            need(isinstance(value, int) and not isinstance(value, bool) and value >= 1,
                 f"{name} must be a positive integer, got {value!r}")
        need(self.vocab >= 2, f"vocab must be >= 2, got {self.vocab}")
        need(self.norm in NORM_PLACEMENTS,
             f"norm placement {self.norm!r} is not one of {', '.join(NORM_PLACEMENTS)}")
        need(self.norm_kind in NORM_KINDS,
             f"norm kind {self.norm_kind!r} is not one of {', '.join(NORM_KINDS)}")
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
        need(self.attn_out_scale > 0.0,
             f"attn_out_scale must be > 0, got {self.attn_out_scale!r}")

    @property
    def head_width(self) -> int:
        return self.d_head if self.d_head is not None else self.d_model // self.n_heads

    @property
    def value_width(self) -> int:
        return self.d_value if self.d_value is not None else self.head_width

    @property
    def mlp_width(self) -> int:
        return self.d_mlp if self.d_mlp is not None else 4 * self.d_model

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "ModelConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown model config keys {unknown}; allowed: {sorted(known)}")
        return cls(**data)


class HookPoint(nn.Identity):
    """A named capture point: the identity map (no arithmetic, no parameters, no state_dict
    entry) whose input :meth:`Transformer.capture` reads with a forward hook."""


class Norm(nn.Module):
    """RMSNorm  N(x) = g * x / sqrt(mean(x^2) + eps)   or
    LayerNorm N(x) = g * (x - mean x) / sqrt(var x + eps) + b, over the last axis."""

    def __init__(self, width: int, kind: str, eps: float):
        super().__init__()
        self.kind, self.eps = kind, eps
        self.gain = nn.Parameter(torch.ones(width))
        self.bias = nn.Parameter(torch.zeros(width)) if kind == "layer" else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = (x.shape[-1],)
        if self.kind == "rms":
            return F.rms_norm(x, shape, self.gain, self.eps)
        return F.layer_norm(x, shape, self.gain, self.bias, self.eps)


class Attention(nn.Module):
    """Causal multi-head attention with weights W_Q, W_K: (H, d, d_head), W_V: (H, d, d_value),
    W_O: (H, d_value, d)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        h, d, dk, dv = cfg.n_heads, cfg.d_model, cfg.head_width, cfg.value_width
        self.W_Q = nn.Parameter(torch.randn(h, d, dk) * cfg.init_std)
        self.W_K = nn.Parameter(torch.randn(h, d, dk) * cfg.init_std)
        self.W_V = nn.Parameter(torch.randn(h, d, dv) * cfg.init_std)
        W_O = torch.randn(h, dv, d) * cfg.init_std / math.sqrt(2 * cfg.n_layers)
        if cfg.attn_out_scale != 1.0:  # the default leaves the init (and its numbers) unchanged
            W_O = W_O * cfg.attn_out_scale
        self.W_O = nn.Parameter(W_O)
        self.dropout = nn.Dropout(cfg.attn_dropout)
        self.scale = 1.0 / math.sqrt(dk)
        self.hook_pattern = HookPoint()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q = torch.einsum("bsd,hde->bhse", x, self.W_Q)
        k = torch.einsum("bsd,hde->bhse", x, self.W_K)
        v = torch.einsum("bsd,hde->bhse", x, self.W_V)
        scores = torch.einsum("bhqe,bhke->bhqk", q, k) * self.scale
        n = x.shape[1]
        causal = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
        weights = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        weights = self.hook_pattern(weights)
        mixed = torch.einsum("bhqk,bhke->bhqe", self.dropout(weights), v)
        return torch.einsum("bhqe,hed->bqd", mixed, self.W_O), weights


class MLP(nn.Module):
    """GELU: gelu(x W_in) W_out.  SwiGLU: (silu(x W_gate) * x W_in) W_out."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d, m = cfg.d_model, cfg.mlp_width
        self.kind = cfg.mlp
        self.W_in = nn.Parameter(torch.randn(d, m) * cfg.init_std)
        self.W_gate = nn.Parameter(torch.randn(d, m) * cfg.init_std) if cfg.mlp == "swiglu" else None
        self.W_out = nn.Parameter(torch.randn(m, d) * cfg.init_std / math.sqrt(2 * cfg.n_layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = x @ self.W_in
        hidden = F.silu(x @ self.W_gate) * hidden if self.kind == "swiglu" else F.gelu(hidden)
        return hidden @ self.W_out


class Block(nn.Module):
    """One layer: x <- rule(x, attention), then x <- rule(x, MLP), with the placement's rule.

    Capture points (as TransformerLens's hook points), in the order they fire, with x the block
    input, f_attn and f_mlp the sublayers (residual dropout included), N_in and N_out a sublayer's
    input and output norms; every one is (batch, seq, d_model) except the attention pattern:

        hook_resid_pre             x
        hook_attn_in               h = N_in(x) (pre, peri), else x: what attention reads
        attn.hook_pattern          P = softmax(h W_Q (h W_K)^T / sqrt(d_head) + causal mask),
                                   (batch, heads, seq, seq), each row summing to 1
        hook_attn_out              f_attn(h) = sum_heads P h W_V W_O
        hook_attn_norm_out_input   what N_out receives: x + f_attn(h) (post), f_attn(h) (attn_out,
                                   peri)                                 [placements with N_out]
        hook_attn_norm_out_output  N_out of it                           [placements with N_out]
        hook_resid_mid             x' = rule(x, f_attn): the residual between the sublayers [MLP]
        hook_mlp_in, hook_mlp_out, hook_mlp_norm_out_input, hook_mlp_norm_out_output
                                   the same four points of the MLP sublayer acting on x'     [MLP]
        hook_resid_post            the block output: x' = rule(x', f_mlp) with an MLP, else x'

    A point in brackets exists only in blocks that have that part, so every point fires."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.placement = cfg.norm
        placement = PLACEMENTS[cfg.norm]

        def norm(used: bool) -> nn.Module:
            return Norm(cfg.d_model, cfg.norm_kind, cfg.eps) if used else nn.Identity()

        has_out = placement.output_norm is not None
        self.attn = Attention(cfg)
        self.attn_norm_in, self.attn_norm_out = norm(placement.input_norm), norm(has_out)
        self.mlp = MLP(cfg) if cfg.mlp else None
        if self.mlp is not None:
            self.mlp_norm_in, self.mlp_norm_out = norm(placement.input_norm), norm(has_out)
        self.dropout = nn.Dropout(cfg.resid_dropout)
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

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(block output, attention pattern P)."""
        rule, pattern = PLACEMENTS[self.placement].rule, []

        def attention(h: torch.Tensor) -> torch.Tensor:
            out, weights = self.attn(self.hook_attn_in(h))
            pattern.append(weights)
            return self.hook_attn_out(self.dropout(out))

        def mlp(h: torch.Tensor) -> torch.Tensor:
            return self.hook_mlp_out(self.dropout(self.mlp(self.hook_mlp_in(h))))

        x = rule(self.hook_resid_pre(x), attention, self.attn_norm_in, self._attn_norm_out)
        if self.mlp is not None:
            x = rule(self.hook_resid_mid(x), mlp, self.mlp_norm_in, self._mlp_norm_out)
        return self.hook_resid_post(x), pattern[0]

    # the output norms with their capture points; only placements with an N_out call them
    def _attn_norm_out(self, y: torch.Tensor) -> torch.Tensor:
        return self.hook_attn_norm_out_output(self.attn_norm_out(self.hook_attn_norm_out_input(y)))

    def _mlp_norm_out(self, y: torch.Tensor) -> torch.Tensor:
        return self.hook_mlp_norm_out_output(self.mlp_norm_out(self.hook_mlp_norm_out_input(y)))


class Capture(dict):
    """Capture-point name -> the tensor that last passed through it, filled by forward hooks
    while open. The tensors are the model's own (not copied, not detached), so
    ``torch.autograd.grad`` works on them; with ``retain_grad`` each one that requires grad also
    keeps its ``.grad`` after a backward pass. ``with`` closes it; so does :meth:`close`."""

    def __init__(self, points: dict[str, HookPoint], retain_grad: bool = False):
        super().__init__()
        self.retain_grad = retain_grad
        self._handles = [point.register_forward_hook(self._keeper(name))
                         for name, point in points.items()]

    def _keeper(self, name: str):
        def keep(module: nn.Module, args: tuple, output: torch.Tensor) -> None:
            if self.retain_grad and output.requires_grad:
                output.retain_grad()
            self[name] = output
        return keep

    def close(self) -> None:
        """Remove the hooks (the captured tensors stay)."""
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def __enter__(self) -> "Capture":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Transformer(nn.Module):
    """Decoder-only transformer; ``forward(tokens) -> logits`` of shape (batch, seq, vocab)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.W_E = nn.Parameter(torch.randn(cfg.vocab, cfg.d_model) * cfg.init_std)
        self.W_pos = (nn.Parameter(torch.randn(cfg.max_len, cfg.d_model) * cfg.init_std)
                      if cfg.max_len else None)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.final_norm = (Norm(cfg.d_model, cfg.norm_kind, cfg.eps)
                           if PLACEMENTS[cfg.norm].final_norm else nn.Identity())
        self.W_U = nn.Parameter(torch.randn(cfg.d_model, cfg.vocab) * cfg.init_std)

    def residual(self, tokens: torch.Tensor) -> torch.Tensor:
        """The input residual stream W_E[t] (+ W_pos)."""
        check_tokens(tokens, self.cfg.vocab, self.cfg.max_len)
        x = self.W_E[tokens]
        if self.W_pos is not None:
            x = x + self.W_pos[: tokens.shape[1]]
        return x

    def forward(self, tokens: torch.Tensor, return_attention: bool = False):
        x = self.residual(tokens)
        attention = []
        for block in self.blocks:
            x, weights = block(x)
            attention.append(weights)
        logits = self.final_norm(x) @ self.W_U
        return (logits, attention) if return_attention else logits

    # -- named capture points ---------------------------------------------------------------
    def hook_points(self) -> dict[str, HookPoint]:
        """Every capture point by name, e.g. ``blocks.0.hook_attn_out`` (see :class:`Block`)."""
        return {name: module for name, module in self.named_modules()
                if isinstance(module, HookPoint)}

    def capture(self, *patterns: str, retain_grad: bool = False) -> Capture:
        """Record the capture points whose names match any of the shell-style ``patterns``
        (every point if none is given) while the blocks run, directly or through
        :meth:`forward`::

            with model.capture("blocks.*.hook_attn_out", "blocks.0.attn.hook_pattern") as cache:
                model(tokens)
            cache["blocks.1.hook_attn_out"]

        ``retain_grad``: the captured tensors keep their gradients (:class:`Capture`).
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
        """(B, D) with B = W_E W_U (direct path) and D = W_E W_V W_O W_U (logit displacement)."""
        attn = self._single_head()
        B = self.W_E @ self.W_U
        D = self.W_E @ attn.W_V[0] @ attn.W_O[0] @ self.W_U
        return B, D

    @torch.no_grad()
    def attention_scores(self) -> torch.Tensor:
        """A = W_E W_Q W_K^T W_E^T / sqrt(d_head): row q, column k is the score of key k."""
        attn = self._single_head()
        return (self.W_E @ attn.W_Q[0]) @ (self.W_E @ attn.W_K[0]).T * attn.scale


def check_tokens(tokens: torch.Tensor, vocab: int, max_len: int | None = None) -> None:
    """ValueError unless ``tokens`` is an integer (batch, seq) tensor with entries in [0, vocab)."""
    if not isinstance(tokens, torch.Tensor):
        raise TypeError(f"tokens must be a torch.Tensor, got {type(tokens).__name__}")
    if tokens.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise ValueError(f"tokens must have an integer dtype, got {tokens.dtype}")
    if tokens.dim() != 2 or tokens.shape[1] < 1:
        raise ValueError(f"tokens must have shape (batch, seq >= 1), got {tuple(tokens.shape)}")
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab):
        raise ValueError(f"tokens must lie in [0, {vocab - 1}], got values in "
                         f"[{int(tokens.min())}, {int(tokens.max())}]")
    if max_len is not None and tokens.shape[1] > max_len:
        raise ValueError(f"sequence length {tokens.shape[1]} exceeds max_len={max_len}")
