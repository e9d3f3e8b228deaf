"""BEMA against a plain temperature control.

BEMA's weights are BEMA_t = EMA_t + alpha_t (theta_t - theta_0) (Block & Zhang; the averager:
:mod:`resharpen.experiments.training.averaging`). On a run that has converged, EMA_t ~ theta_t, so
BEMA_t ~ (1 + a) theta_t - a theta_0: an extrapolation away from the initial weights, which in a
model whose logits are products of weight matrices mostly scales the logits up. If that is all
it does, the raw model with its logits multiplied by one scalar tau does as well.

- :func:`extrapolation_alpha`: a in  theta_BEMA - theta_t ~ a (theta_t - theta_0), least squares
  over every parameter entry at once, a = <b - t, t - 0> / |t - 0|^2, with the relative residual
  |b - t - a (t - 0)| / |b - t| (0: BEMA is exactly that extrapolation).
- :func:`margin_tau`: the temperature control. tau minimizes sum over the in-distribution
  positions (lengths 1..L_train, the evaluation inputs) of |tau c(z_raw) - c(z_BEMA)|^2, where
  c centres a position's logits (softmax ignores the mean). Every logit margin z_i - z_j is a
  difference of centred logits and sum_{i,j} (d_i - d_j)^2 = 2 v sum_i d_i^2 for centred d, so
  this tau is exactly the least-squares match of all of BEMA's in-distribution margins:
  tau = <c(z_raw), c(z_BEMA)> / |c(z_raw)|^2 (closed form).
- :class:`Tempered`: a module whose logits are tau times the wrapped model's, evaluated like any
  model (:func:`resharpen.experiments.set_complement.train.evaluate_weights`).
- :func:`temperature_row`: for one finished run folder with raw and BEMA weights, alpha, tau and
  the ID / OOD invalid mass of raw, BEMA and tempered raw.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from resharpen.experiments.training.runs import load_run
from resharpen.experiments.tasks.set_complement import sample_inputs
from resharpen.experiments.training.loop import seeded_model


class Tempered(nn.Module):
    """``tau`` times the logits of ``model`` (the same parameters, the same ``cfg``)."""

    def __init__(self, model: nn.Module, tau: float):
        super().__init__()
        self.model, self.tau = model, float(tau)
        self.cfg = getattr(model, "cfg", None)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.tau * self.model(tokens)


def flat(model: nn.Module) -> torch.Tensor:
    """Every parameter entry of ``model`` as one float64 vector (in ``named_parameters`` order)."""
    return torch.cat([p.detach().double().flatten() for _, p in model.named_parameters()])


def extrapolation_alpha(bema: torch.Tensor, raw: torch.Tensor, start: torch.Tensor
                        ) -> tuple[float, float]:
    """(a, relative residual) of  bema - raw ~ a (raw - start)  (module docstring)."""
    step, move = bema - raw, raw - start
    alpha = float(step @ move / (move @ move))
    residual = float((step - alpha * move).norm() / step.norm()) if step.norm() > 0 else 0.0
    return alpha, residual


def centered(logits: torch.Tensor) -> torch.Tensor:
    return logits - logits.mean(-1, keepdim=True)


def in_distribution_logits(model: nn.Module, vocab: int, train_len: int, per_length: int,
                           seed: int) -> torch.Tensor:
    """float64 logits (N, L_train, v) of ``model`` on the evaluation inputs of the lengths
    1..L_train (:func:`~resharpen.experiments.tasks.set_complement.sample_inputs`)."""
    tokens = sample_inputs(vocab, train_len, per_length * train_len, seed)
    with torch.no_grad():
        return model.double().eval()(tokens).double()


def margin_tau(raw_logits: torch.Tensor, bema_logits: torch.Tensor) -> float:
    """The least-squares tau of BEMA's in-distribution margins (module docstring)."""
    a, b = centered(raw_logits).flatten(), centered(bema_logits).flatten()
    return float(a @ b / (a @ a))


def temperature_row(folder: str | Path) -> dict:
    """alpha, tau and the raw / BEMA / tempered-raw ID and OOD invalid mass of one run."""
    from resharpen.experiments.set_complement.train import evaluate_weights, summarize

    run = load_run(folder)
    config = run.config
    v, length = config["task"]["vocab"], config["task"]["train_len"]
    ev = config["eval"]
    raw, bema = run.model("raw", torch.float64), run.model("bema", torch.float64)
    start = seeded_model(config, vocab=v, max_len=v)
    alpha, residual = extrapolation_alpha(flat(bema), flat(raw), flat(start))
    tau = margin_tau(in_distribution_logits(raw, v, length, ev["per_length"], ev["seed"] + 1),
                     in_distribution_logits(bema, v, length, ev["per_length"], ev["seed"] + 1))
    row = {"seed": config["train"]["seed"], "alpha": alpha, "alpha_residual": residual,
           "tau": tau, "folder": str(folder)}
    for kind, module in (("raw", raw), ("bema", bema), ("tempered", Tempered(raw, tau))):
        summary = summarize(evaluate_weights(module, config), v, length, ev["threshold"])
        row[kind] = {m: summary[m] for m in ("id_invalid_mass", "ood_invalid_mass")}
    return row


__all__ = ["Tempered", "flat", "extrapolation_alpha", "centered", "in_distribution_logits",
           "margin_tau", "temperature_row"]
