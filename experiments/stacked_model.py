"""The transformer of :mod:`experiments.model` evaluated for K weight sets at once.

``stacked_logits(params, cfg, tokens)`` takes the named parameters of K same-config
:class:`~experiments.model.Transformer` s stacked along a new leading axis (``params[name]`` has
shape ``(K, *shape)``) and tokens of shape ``(K, B, S)``, and returns logits ``(K, B, S, v)``: for
every k exactly ``Transformer(cfg)`` with weights ``params[.][k]`` applied to ``tokens[k]``
(tests/test_stacked_model.py checks every placement, norm kind, MLP kind and positions against
the module, to float32 rounding).

Why a second forward at all: ``torch.func.vmap`` over the module turns each small per-model op
into a batched op but keeps the module's op count (gathers, einsums, masks) and adds its own
overhead; here the K models share every op, with

- one embedding gather for all models (``F.embedding`` on the (K v, d) table, offsets k v),
- the query, key and value projections as batched matmuls over (model, head),
- attention through ``F.scaled_dot_product_attention`` (causal, dropout on the weights),
- norms as plain broadcast arithmetic with per-model gains, and the placement of each sublayer
  taken from :data:`experiments.model.PLACEMENTS` (the same wrap functions as the module).

Attention dropout draws its masks inside ``scaled_dot_product_attention``; the masks are not
the ones the module would draw (same distribution), so with dropout a stacked run is a run of
the same distribution, not the same run.
"""
from __future__ import annotations

import math
from typing import Callable

import torch
import torch.nn.functional as F

from experiments.model import PLACEMENTS, ModelConfig

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


def _attention(params: Params, prefix: str, cfg: ModelConfig, x: torch.Tensor,
               training: bool) -> torch.Tensor:
    """sum_h softmax(x W_Q^h (x W_K^h)^T / sqrt(d_head) + causal) x W_V^h W_O^h, per model."""
    k_models, batch, seq, d = x.shape
    h, dk, dv = cfg.n_heads, cfg.head_width, cfg.value_width
    flat = x.reshape(k_models, 1, batch * seq, d)

    def project(name: str, width: int) -> torch.Tensor:  # (K, H, B, S, width), no copy
        return torch.matmul(flat, params[f"{prefix}.{name}"]).view(k_models, h, batch, seq, width)

    q, k, v = project("W_Q", dk), project("W_K", dk), project("W_V", dv)
    mixed = F.scaled_dot_product_attention(
        q, k, v, is_causal=True, scale=1.0 / math.sqrt(dk),
        dropout_p=cfg.attn_dropout if training else 0.0)
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


def stacked_logits(params: Params, cfg: ModelConfig, tokens: torch.Tensor,
                   training: bool = False) -> torch.Tensor:
    """Logits (K, B, S, v) of K transformers with stacked weights on tokens (K, B, S).

    ``params`` maps the names of ``Transformer(cfg).named_parameters()`` to stacked tensors.
    ``training`` turns dropout on (attention weights and sublayer outputs)."""
    k_models, batch, seq = tokens.shape
    if cfg.max_len is not None and seq > cfg.max_len:
        raise ValueError(f"sequence length {seq} exceeds max_len={cfg.max_len}")
    table = params["W_E"]
    offsets = torch.arange(k_models, device=tokens.device).view(-1, 1, 1) * cfg.vocab
    x = F.embedding(tokens + offsets, table.reshape(-1, table.shape[-1]))
    if "W_pos" in params:
        x = x + params["W_pos"][:, None, :seq]
    wrap = PLACEMENTS[cfg.norm]
    drop = (lambda y: F.dropout(y, cfg.resid_dropout, training))  # noqa: E731
    for layer in range(cfg.n_layers):
        pre = f"blocks.{layer}"
        x = wrap(x, lambda h: drop(_attention(params, f"{pre}.attn", cfg, h, training)),
                 _norm(params, f"{pre}.attn_norm_in", cfg), _norm(params, f"{pre}.attn_norm_out", cfg))
        if cfg.mlp:
            x = wrap(x, lambda h: drop(_mlp(params, f"{pre}.mlp", cfg, h)),
                     _norm(params, f"{pre}.mlp_norm_in", cfg), _norm(params, f"{pre}.mlp_norm_out", cfg))
    final = _norm(params, "final_norm", cfg)
    if final is not None:
        x = final(x)
    return torch.bmm(x.reshape(k_models, batch * seq, -1), params["W_U"]).view(
        k_models, batch, seq, cfg.vocab)
