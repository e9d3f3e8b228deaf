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
    ValueError names a bad file, key or value before any training."""
    from resharpen.experiments.training import config as cfgmod
    from resharpen.experiments.training.config import run_folder
    from resharpen.experiments.common.io import ensure_writable_dir
    from resharpen.experiments.common.names import check_name
    from resharpen.experiments.common.profiles import check_profile
    from resharpen.experiments.training.runs import load_run
    from resharpen.experiments.training.loop import save_run
    from resharpen.experiments.set_complement import train as sc_train

    if isinstance(config, Mapping):
        check_profile(profile)
        sections = {k: dict(v) for k, v in config.items() if k != "name"}
        cfgmod.deep_merge(sections, cfgmod.parse_sets(list(overrides)))
        name = check_name(str(config.get("name", "run")), "run name")
        built = sc_train.SCHEMA.validate(sections)
        built["name"] = name
    elif isinstance(config, (str, Path)):
        built = sc_train.load_config(config, list(overrides), profile=profile)
    else:
        raise TypeError(f"config must be a TOML path or a mapping of sections, got "
                        f"{type(config).__name__}")
    folder = ensure_writable_dir(Path(out) if out is not None else run_folder(built["name"]))
    save_run(sc_train.train(built, progress=progress), folder)
    return load_run(folder)


def run_claim(claim_id: str, profile: str = "quick") -> Record:
    """Run one ledger claim by its exact id and return its record: status PASS (the check holds
    at its tolerance), FAIL (a measured disagreement), INCONCLUSIVE (too little data) or ERROR
    (the check raised), with the measured and expected values, the tolerance and a detail.
    ValueError for an unknown id or profile (``resharpen verify --list`` lists the ids)."""
    from resharpen.claims import all_claims
    from resharpen.experiments import ledger

    claims = {c.id: c for c in all_claims()}
    if claim_id not in claims:
        raise ValueError(f"no claim {claim_id!r}; `resharpen verify --list` lists them")
    return ledger.run_claim(claims[claim_id], profile)
