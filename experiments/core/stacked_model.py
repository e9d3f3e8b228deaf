"""The transformer of :mod:`resharpen.experiments.core.model` evaluated for K weight sets at once.

``stacked_logits(params, cfg, tokens)`` takes the named parameters of K same-config
:class:`~resharpen.experiments.core.model.Transformer` s stacked along a new leading axis (``params[name]`` has
shape ``(K, *shape)``) and tokens of shape ``(K, B, S)``, and returns logits ``(K, B, S, v)``: for
every k exactly ``Transformer(cfg)`` with weights ``params[.][k]`` applied to ``tokens[k]``
(tests/test_stacked_model.py checks every placement, norm kind, MLP kind and positions against
the module, to float32 rounding, and the gradients too).

Why a second forward: the K models share every op, laid out for few, large kernels,

- one embedding gather for all models (``F.embedding`` on the (K v, d) table, offsets k v;
  a one-hot matmul under torch.compile, :func:`_embed`),
- the query, key and value projections as batched matmuls over (model, head) (three
  (B S) x d x d_head products: one fused x [W_Q | W_K | W_V] product was measured 2.4x slower
  in MKL at d = 64),
- causal softmax attention, the output projection summed over heads by one matmul,
- norms as broadcast arithmetic with per-model gains, each sublayer wrapped by the same
  placement rules as the module (:data:`resharpen.experiments.core.model.PLACEMENTS`),

and it is a plain tensor program that ``torch.compile`` fuses (``resharpen.experiments.set_complement.ensemble``).

Dropout: ``dropout=(attn_p, resid_p)`` gives per-model rates, tensors of shape (K,) or None
(:func:`dropout_rates`; default: the config's rates for every model); a unit is kept with
probability 1 - p_k and scaled by 1 / (1 - p_k). The masks come from torch's global
generator, so they are not the masks the module would draw: with dropout a stacked run is a run
of the same distribution, not the same run.
"""
from __future__ import annotations

import math
from typing import Callable

import torch
import torch.nn.functional as F

from resharpen.experiments.core.model import PLACEMENTS, ModelConfig

Params = dict[str, torch.Tensor]


def _norm(params: Params, prefix: str, cfg: ModelConfig) -> Callable | None:
    """The stacked norm ``prefix`` (gains (K, d), LayerNorm biases (K, d)), or None if absent:
    RMSNorm g * x / sqrt(mean x^2 + eps); LayerNorm g * (x - mean x) / sqrt(var x + eps) + b."""
    gain = params.get(f"{prefix}.gain")
    if gain is None:
        return None
    gain = gain[:, None, None, :]
    if cfg.norm_kind == "rms":
        return lambda x: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + cfg.eps) * gain
    bias = params[f"{prefix}.bias"][:, None, None, :]
    return lambda x: F.layer_norm(x, (x.shape[-1],), eps=cfg.eps) * gain + bias


def _dropout(x: torch.Tensor, rate: torch.Tensor | None) -> torch.Tensor:
    """Inverted dropout with rate p_k for model k (x has the model axis first); None = off."""
    if rate is None:
        return x
    keep = (1.0 - rate).view((-1,) + (1,) * (x.dim() - 1))
    return x * (torch.rand_like(x) < keep) / keep


def _attention(params: Params, prefix: str, cfg: ModelConfig, x: torch.Tensor,
               attn_rate: torch.Tensor | None) -> torch.Tensor:
    """sum_h softmax(x W_Q^h (x W_K^h)^T / sqrt(d_head) + causal) x W_V^h W_O^h, per model."""
    k_models, batch, seq, d = x.shape
    h, dk, dv = cfg.n_heads, cfg.head_width, cfg.value_width
    flat = x.reshape(k_models, 1, batch * seq, d)

    def project(name: str, width: int) -> torch.Tensor:  # (K, H, B, S, width), no copy
        return torch.matmul(flat, params[f"{prefix}.{name}"]).view(k_models, h, batch, seq, width)

    q, k, v = project("W_Q", dk), project("W_K", dk), project("W_V", dv)
    scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(dk))
    causal = torch.ones(seq, seq, dtype=torch.bool, device=x.device).tril()
    attn = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
    mixed = torch.matmul(_dropout(attn, attn_rate), v)  # (K, H, B, S, dv)
    mixed = mixed.permute(0, 2, 3, 1, 4).reshape(k_models, batch * seq, h * dv)
    w_o = params[f"{prefix}.W_O"].reshape(k_models, h * dv, d)
    return torch.bmm(mixed, w_o).view(k_models, batch, seq, d)


def _mlp(params: Params, prefix: str, cfg: ModelConfig, x: torch.Tensor) -> torch.Tensor:
    """GELU: gelu(x W_in) W_out;  SwiGLU: (silu(x W_gate) * x W_in) W_out, per model."""
    k_models, batch, seq, d = x.shape
    flat = x.reshape(k_models, batch * seq, d)
    hidden = torch.bmm(flat, params[f"{prefix}.W_in"])
    if cfg.mlp == "swiglu":
        hidden = F.silu(torch.bmm(flat, params[f"{prefix}.W_gate"])) * hidden
    else:
        hidden = F.gelu(hidden)
    return torch.bmm(hidden, params[f"{prefix}.W_out"]).view(k_models, batch, seq, d)


def _embed(table: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Rows table[k, tokens[k]]: (K, v, d), (K, B, S) -> (K, B, S, d). Eager: one gather from
    the (K v, d) table (tokens outside 0..v-1 raise ValueError rather than read another
    model's rows); under torch.compile: one-hot(tokens) @ table as a batched matmul, the same
    rows bit for bit for a finite table, because inductor turns the gather's backward into a
    scatter-add that measured slower than the matmul's (4.3 ms against about 2 ms per step at
    batch 64, K = 16)."""
    k_models, vocab = table.shape[:2]
    if torch.compiler.is_compiling():
        one_hot = F.one_hot(tokens.flatten(1), vocab).to(table.dtype)
        return torch.bmm(one_hot, table).view(*tokens.shape, -1)
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab):
        raise ValueError(f"tokens must lie in 0..{vocab - 1}, got "
                         f"{int(tokens.min())}..{int(tokens.max())}")
    offsets = torch.arange(k_models, device=tokens.device).view(-1, 1, 1) * vocab
    return F.embedding(tokens + offsets, table.reshape(-1, table.shape[-1]))


def dropout_rates(cfg: ModelConfig, k_models: int, dropout=None) -> tuple:
    """(attn, resid) per-model dropout rates as tensors of shape (K,), None where every rate is
    0; ``dropout`` = (attn rates, resid rates), each a number or K numbers (default: the
    config's rates). ValueError outside [0, 1)."""
    if dropout is None:
        dropout = (cfg.attn_dropout, cfg.resid_dropout)
    rates = []
    for rate in dropout:
        rate = torch.as_tensor(rate, dtype=torch.float32).expand(k_models).clone()
        if bool(((rate < 0) | (rate >= 1)).any()):
            raise ValueError(f"dropout rates must lie in [0, 1), got {rate.tolist()}")
        rates.append(rate if bool((rate > 0).any()) else None)
    return tuple(rates)


def stacked_logits(params: Params, cfg: ModelConfig, tokens: torch.Tensor,
                   training: bool = False, dropout=None) -> torch.Tensor:
    """Logits (K, B, S, v) of K transformers with stacked weights on tokens (K, B, S).

    ``params`` maps the names of ``Transformer(cfg).named_parameters()`` to stacked tensors.
    ``training`` turns dropout on (attention weights and sublayer outputs), at the config's
    rates or at per-model ``dropout`` rates from :func:`dropout_rates`."""
    k_models, batch, seq = tokens.shape
    if cfg.max_len is not None and seq > cfg.max_len:
        raise ValueError(f"sequence length {seq} exceeds max_len={cfg.max_len}")
    attn_rate, resid_rate = (None, None) if not training else (
        dropout if dropout is not None else dropout_rates(cfg, k_models))
    x = _embed(params["W_E"], tokens)
    if "W_pos" in params:
        x = x + params["W_pos"][:, None, :seq]
    wrap = PLACEMENTS[cfg.norm].rule
    for layer in range(cfg.n_layers):
        pre = f"blocks.{layer}"
        x = wrap(x, lambda h: _dropout(_attention(params, f"{pre}.attn", cfg, h, attn_rate),
                                       resid_rate),
                 _norm(params, f"{pre}.attn_norm_in", cfg), _norm(params, f"{pre}.attn_norm_out", cfg))
        if cfg.mlp:
            x = wrap(x, lambda h: _dropout(_mlp(params, f"{pre}.mlp", cfg, h), resid_rate),
                     _norm(params, f"{pre}.mlp_norm_in", cfg), _norm(params, f"{pre}.mlp_norm_out", cfg))
    final = _norm(params, "final_norm", cfg)
    if final is not None:
        x = final(x)
    return torch.bmm(x.reshape(k_models, batch * seq, -1), params["W_U"]).view(
        k_models, batch, seq, cfg.vocab)
