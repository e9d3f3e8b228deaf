"""Seeded random-search sweeps of Set Complement training (configs/set_complement/*.toml with a
``[search]`` table; :func:`resharpen.experiments.training.config.load_sweep`).

Layout of ``out/sweeps/<name>`` (``<name>-quick`` for the quick profile; the core's sweep folder,
:mod:`resharpen.experiments.training.sweep`)::

    sweep.json                 the sweep file, its base config, settings and search space
    runs/<name>-<index>/       config.json, metrics.jsonl, per_length.json, summary.json,
                               weights_{raw,ema,bema}.safetensors
    table.csv, table.jsonl     one row per finished run: searched factors + summaries

Configs are drawn by ``random.Random(sweep.seed)`` run after run, so ``--runs 512`` extends a
256-run sweep with the same first 256 runs. Each run seeds torch from its own ``train.seed``
and uses one thread, so a run's metrics are the same on the local pool and on Ray.

With ``ensemble = K`` (``[sweep]`` table or ``--ensemble``), runs that differ only in seed,
learning rate, weight decay, EMA or init scale are trained K at a time as one batched ensemble
(:mod:`resharpen.experiments.training.engine`), one task per group; the unfinished runs are
grouped when the sweep starts or resumes (:func:`resharpen.experiments.training.sweep.group_runs`).
Under the stopping rule (``fit.until_id_invalid_mass``) every run, grouped or alone, is
evaluated at its own fit step, and the table adds ``fit_reached`` and ``fit_step``.
"""
from __future__ import annotations

from pathlib import Path

from resharpen.experiments.training import config as cfgmod
from resharpen.experiments.training.backends import check_backend
from resharpen.experiments.common.io import ensure_writable_dir, undo_on_failure
from resharpen.experiments.training.sweep import execute, group_runs, load_runs, write_rows
from resharpen.experiments.training.runs import WEIGHT_KINDS
from resharpen.experiments.set_complement.config import SCHEMA

MAX_SWEEP_RUNS = 100_000
"""The most runs one sweep plans (``--runs`` or ``sweep.runs``): every run's config is drawn and
checked before the first run starts (about 0.1 ms and a few kB each)."""
TABLE_SUMMARY_KEYS = ("id_invalid_mass", "ood_invalid_mass", "id_kl", "ood_kl", "id_tv",
                      "ood_tv", "lg_score", "lg_fraction", "margin_exponent",
                      "margin_exponent_attn_out_theory")


def run_group(configs: list[dict]) -> list[dict]:
    """Train sweep runs (in a worker) that share an ensemble, or one run alone; return their
    serializable results (:func:`resharpen.experiments.set_complement.train.train_group`)."""
    from resharpen.experiments.set_complement.train import train_group

    return train_group(configs)


def plan(path: str | Path, runs: int | None = None, profile: str = "full") -> dict:
    """The planned sweep of a sweep file: {name, profile, base, settings, space, configs}."""
    base, settings, space = cfgmod.load_sweep(path, SCHEMA, profile=profile)
    runs = settings["runs"] if runs is None else runs
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    if runs > MAX_SWEEP_RUNS:  # planning alone would take minutes and gigabytes
        raise ValueError(f"--runs {runs} is more than a sweep plans: at most {MAX_SWEEP_RUNS} "
                         "runs per sweep folder (split a larger search into several sweeps "
                         "with other sweep.seed)")
    configs = cfgmod.sample_configs(base, space, runs, settings["seed"], SCHEMA, settings["when"])
    name = cfgmod.profiled_name(base["name"], profile)
    return {"name": name, "profile": profile, "base": base, "settings": settings,
            "space": space, "configs": configs}


def _identity(planned: dict, ensemble: int) -> dict:
    identity = {"name": planned["name"], "profile": planned["profile"], "base": planned["base"],
                "seed": planned["settings"]["seed"], "space": planned["space"]}
    if planned["settings"]["when"]:
        identity["when"] = planned["settings"]["when"]
    if ensemble > 1:  # grouped runs are other runs (float32 rounding)
        identity["ensemble"] = ensemble
    return identity


def run_sweep(path: str | Path, *, out: str | Path | None = None, runs: int | None = None,
              workers: int = 2, backend: str = "local", address: str | None = None,
              profile: str = "full", progress: bool = True, ensemble: int | None = None,
              wait: bool = False) -> Path:
    """Run (or resume) a sweep; return its folder. ``ensemble`` (default: the file's
    ``sweep.ensemble``) is the largest number of runs trained as one batched ensemble; runs
    are grouped by :func:`resharpen.experiments.training.sweep.group_runs` (1 = every run alone).
    A folder another process is sweeping is refused (``wait``: waited for;
    :func:`resharpen.experiments.training.sweep.execute`); a folder this call created is removed
    again if the sweep fails before a run is written in it (a full disk, a refusal)."""
    planned = plan(path, runs, profile)
    size = planned["settings"]["ensemble"] if ensemble is None else ensemble
    group_runs(planned["configs"], size)  # a bad size is refused before the folder exists
    check_backend(backend, address)  # before the folder exists
    target = Path(out) if out else cfgmod.sweep_folder(planned["name"])
    with undo_on_failure(target, remove_written=False):
        root = ensure_writable_dir(target)
        execute(root, _identity(planned, size), planned["configs"], run_group,
                lambda: write_table(root, planned["space"]), ensemble=size,
                marker={"file": str(path)}, backend=backend, workers=workers, address=address,
                progress=progress, desc=f"sweep {planned['name']}", wait=wait)
    return root


def flatten(config: dict, summary: dict, factors) -> dict:
    """One table row: the run, its searched factors, the primary weights' summaries and the
    OOD summaries of every weight set."""
    row = {"run": config["name"]}
    for dotted in sorted(factors):
        section, key = dotted.split(".")
        # a key left out of the normalized config at its default (config.check_new_keys)
        row[dotted] = config[section].get(key, SCHEMA.sections[section][key].default)
    row["primary"] = summary["primary"]
    for key in TABLE_SUMMARY_KEYS:
        row[key] = summary[key]
    for weights in WEIGHT_KINDS:
        for key in ("ood_invalid_mass", "ood_kl", "lg_score"):
            row[f"{weights}.{key}"] = summary["by_weights"][weights][key]
    if "fit_reached" in summary:  # the stopping rule: each run at its own fit
        row["fit_reached"] = summary["fit_reached"]
        row["fit_step"] = summary["fit_step"]
    if "converged" in summary:  # train.converge_window: the step that converged, or None
        done = summary["converged"]
        row["converged_step"] = done["step"] if done["converged"] else None
    row["seconds"] = round(summary["seconds"], 3)
    return row


def write_table(root: Path, factors) -> list[dict]:
    """The sweep table of every finished run (:func:`flatten`)."""
    return write_rows(root, [flatten(r["config"], r["summary"], factors) for r in load_runs(root)])


