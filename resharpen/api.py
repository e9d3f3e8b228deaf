"""Functions of the public API that combine parts of the package: training a run, running a claim."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from resharpen.experiments.ledger import Record
    from resharpen.experiments.training.runs import Run


def train(config: str | Path | Mapping[str, Mapping[str, object]],
          overrides: Sequence[str] = (), *, profile: str = "quick",
          out: str | Path | None = None, progress: bool = False) -> Run:
    """Train one Set Complement model, save its run folder and return it read back as a
    :class:`Run` (what ``resharpen train CONFIG --set ... --out OUT`` does).

    The model is the one-layer attention model of the theory (``[model]``: d_model, norm
    placement none | pre | post | attn_out | peri, ...). It is trained on the next-token task of
    inputs t = (t_1..t_s), s <= L_train, whose target p*(t) is uniform on the v - s tokens not in
    t; ``train.target`` is ``sampled`` (the observed next token, a sample of p*) or ``soft``
    (the cross-entropy H(p*, p) itself). Every weight set (raw, EMA, BEMA) is then evaluated
    exactly, in float64, at every length s = 1..v-1: invalid mass, KL(p* || p), margins.

    ``config``: a TOML file, or the name of a packaged config from any working folder
    (``"set_complement/base"``, with or without ``.toml``; a file that exists wins; ``resharpen
    configs`` lists them), whose ``[profile.<profile>]`` table applies; or a mapping
    {section: {key: value}} over the schema's defaults (sections task, model, train, eval;
    optional ``name``, default "run").
    ``overrides``: ``"section.key=value"`` strings, as ``--set``. ``out``: the run folder
    (default ``out/runs/<name>``). ``progress``: a progress bar or line per evaluation.
    ValueError names a bad file, key or value before any training (TypeError a value of the
    wrong type), as ``resharpen train`` does: an empty config is refused, not trained with every
    default. A run that diverges (a non-finite loss, metric or weight) is no result: ValueError
    says so and no run folder is written."""
    from resharpen.experiments.training import config as cfgmod
    from resharpen.experiments.training.config import run_folder
    from resharpen.experiments.common.names import check_name, check_path
    from resharpen.experiments.common.profiles import check_profile
    from resharpen.experiments.training.runs import check_run_folder, load_run
    from resharpen.experiments.training.loop import save_run
    from resharpen.experiments.set_complement import train as sc_train

    overrides = _override_list(overrides)
    if isinstance(config, Mapping):
        check_profile(profile)
        sections = _config_sections(config)
        cfgmod.deep_merge(sections, cfgmod.parse_sets(overrides))
        name = check_name(config.get("name", "run"), "run name")
        built = sc_train.SCHEMA.validate(sections)
        built["name"] = name
    elif isinstance(config, (str, Path)):
        check_path(config, "config")
        built = sc_train.load_config(config, overrides, profile=profile)
    else:
        raise TypeError(f"config must be a TOML path or a mapping of sections, got "
                        f"{type(config).__name__}")
    folder = check_path(out, "out") if out is not None else run_folder(built["name"])
    check_run_folder(folder, "out", built)  # before any training, creating nothing
    result = sc_train.train(built, progress=progress)
    problem = divergence(result)
    if problem:
        raise ValueError(f"the run diverged ({problem}) with train.lr = "
                         f"{built['train']['lr']!r} and model.init_std = "
                         f"{built['model'].get('init_std')!r}: there is no trained model, and no "
                         f"run folder was written; lower the learning rate or the init scale")
    save_run(result, folder)  # a failed write removes what it wrote
    return load_run(folder)


def _override_list(overrides: object) -> list[str]:
    """``overrides`` as a list of strings; TypeError for one string (``["task.vocab=8"]``, not
    ``"task.vocab=8"``) or anything but a sequence of strings."""
    if isinstance(overrides, (str, bytes)) or not isinstance(overrides, Sequence) or not all(
            isinstance(item, str) for item in overrides):
        raise TypeError(f"overrides must be a sequence of 'section.key=value' strings (as "
                        f"--set), e.g. ['train.steps=100'], got {overrides!r}"[:300])
    return list(overrides)


def _config_sections(config: Mapping) -> dict:
    """The sections {section: {key: value}} of a config mapping (its ``name`` apart). ValueError
    for an empty config, as ``resharpen train`` refuses an empty file; TypeError for a section
    that is not a mapping."""
    sections = {key: value for key, value in config.items() if key != "name"}
    if not sections:
        raise ValueError("config is empty: name a base config (a TOML path or a packaged name "
                         "such as 'set_complement/base') or set the tables you mean "
                         "({'task': {...}, 'model': {...}, 'train': {...}})")
    for key, value in sections.items():
        if not isinstance(value, Mapping):
            raise TypeError(f"config[{key!r}] must be a mapping of keys to values (a section), "
                            f"got {type(value).__name__} {value!r}"[:300])
    return {key: dict(value) for key, value in sections.items()}


def divergence(result: Mapping) -> str | None:
    """Why a trained run is no result, or None: a non-finite training loss (its first step) or
    non-finite trained weights. (A summary's fitted exponent may be NaN in a healthy run: too
    few lengths to fit.)"""
    import math

    import torch

    for row in result.get("history", ()):
        loss = row.get("loss")
        if isinstance(loss, float) and not math.isfinite(loss):
            return f"the training loss is {loss} at step {row.get('step')}"
    weights = result.get("weights")
    for kind, tensors in (weights.tensors.items() if weights is not None else ()):
        for name, tensor in tensors.items():
            if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                return f"the {kind} weights' {name} hold NaN or inf"
    return None


def run_claim(claim_id: str, profile: str = "quick") -> Record:
    """Run one ledger claim by its exact id and return its record: status PASS (the check holds
    at its tolerance), FAIL (a measured disagreement), INCONCLUSIVE (too little data) or ERROR
    (the check raised), with the measured and expected values, the tolerance and a detail.
    ValueError for an unknown id or profile (``resharpen verify --list`` lists the ids)."""
    from resharpen.claims import all_claims
    from resharpen.experiments import ledger

    if not isinstance(claim_id, str):
        raise TypeError(f"claim_id must be a string, got {type(claim_id).__name__} {claim_id!r}")
    claims = {c.id: c for c in all_claims()}
    if claim_id not in claims:
        raise ValueError(f"no claim {claim_id!r}; `resharpen verify --list` lists them")
    return ledger.run_claim(claims[claim_id], profile)
