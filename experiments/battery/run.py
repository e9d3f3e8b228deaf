"""``resharpen battery``: one normalization scheme (a plug-in or a registered one) through the
package's experiments, beside the reference schemes, into one folder, resumable.

Steps, each skipped when its results are already in the folder (a killed battery resumes: the
two grids resume run by run, the dynamics group by group):

1. ``set_complement/``: the Set Complement fit grid (``set_complement/fit_placements_v32``, the
   profile's sizes), its scheme grid replaced by the scheme and :data:`REFERENCES`, its seeds and
   stopping rule (``fit.until_id_invalid_mass``: every run ends at the fit) unchanged
   (:func:`resharpen.experiments.set_complement.sweep.run_sweep`);
2. ``languages/``: the language grid (``languages/grid``, the profile's tasks and seeds and its
   ``fit.until_id_invalid_mass``), its scheme grid replaced the same way
   (:func:`resharpen.experiments.languages.grid.run_grid`);
3. ``dynamics/``: the trained-dynamics study's models (:mod:`resharpen.experiments.dynamics.trained`:
   attention only, RMSNorm, its tasks, seeds and fit), every scheme measured at initialization
   and trained to the fit (:func:`~resharpen.experiments.dynamics.trained.train_group_measured`);
4. ``battery.md`` and ``battery.json``: the table (:mod:`resharpen.experiments.battery.table`).

``battery_plan.json`` records what the folder holds (the scheme, its plug-in file's SHA-256, the
profile and the references): a second battery into the same folder with another scheme, another
version of the plug-in file or another profile is refused before any work. Every file is written
under the folder named, atomically.

Profiles: ``quick`` and ``full`` are the configs' profiles; ``tiny`` is the quick profile shrunk
to run in seconds (the tests): the fit grid at v = 8, one language (dyck1), five seeds, a few
hundred steps at most, small dynamics models, and two references (pre and post).
"""
from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from resharpen.experiments.model.schemes import FIRST

REFERENCES = tuple(name for name in FIRST if name != "none") + ("pre_nofinal",)
"""The schemes every battery trains beside the user's: the placements of the papers' figures
with a norm, and Pre-LN without its final norm (the control in which nothing resharpens)."""
SC_SWEEP = "set_complement/fit_placements_v32.toml"
LANGUAGE_GRID = "languages/grid.toml"
PLAN_FILE = "battery_plan.json"
REPORT_JSON, REPORT_MARKDOWN = "battery.json", "battery.md"  # the report, written last
PARTS = ("set_complement", "languages", "dynamics")  # the folders of the three steps
TINY_SEEDS = (0, 1, 2, 3, 4)  # stats.MIN_N pairs: the tiny battery's tests compute p


@dataclass(frozen=True)
class Size:
    """What one battery profile trains. ``profile``: the configs' profile. ``set_complement`` and
    ``languages``: sections set over the sweep files' (``{}``: their own). ``seeds`` and
    ``tasks``: the grids' (None: the files' own). ``dynamics``: the trained-dynamics profile's
    name, or a dict of :class:`~resharpen.experiments.dynamics.trained_plan.Sizes` fields set over
    the quick profile's sizes;
    ``dynamics_tasks``: its tasks (None: the study's). ``references``: the schemes trained beside
    the user's (default :data:`REFERENCES`)."""

    profile: str
    set_complement: dict = field(default_factory=dict)
    languages: dict = field(default_factory=dict)
    seeds: tuple[int, ...] | None = None
    tasks: tuple[str, ...] | None = None
    dynamics: str | dict = "quick"
    dynamics_tasks: tuple[str, ...] | None = None
    references: tuple[str, ...] = REFERENCES


SIZES = {
    "quick": Size("quick"),
    "full": Size("full", dynamics="full"),
    "tiny": Size(
        "quick",
        set_complement={"task": {"vocab": 8}, "model": {"d_model": 16},
                        "train": {"steps": 300, "eval_every": 25},
                        "fit": {"until_id_invalid_mass": 2e-2}, "eval": {"per_length": 8}},
        languages={"task": {"train_len": 4, "eval_len": 8},
                   "model": {"d_model": 16, "n_heads": 2},
                   "train": {"steps": 150, "log_every": 10},
                   "fit": {"until_id_invalid_mass": 0.03}, "eval": {"count": 8}},
        seeds=TINY_SEEDS, tasks=("dyck1",),
        dynamics={"d_model": 16, "depths": (2,), "seeds": (0, 1), "train_len": 8, "steps": 20,
                  "log_every": 10, "n_heads": 2, "eval_count": 16, "measure_count": 8},
        dynamics_tasks=("dyck1",), references=("pre", "post")),
}
"""The battery's profiles (see the module docstring)."""


def check_profile(profile: str) -> Size:
    if profile not in SIZES:
        raise ValueError(f"battery profile {profile!r} is not one of {', '.join(SIZES)}")
    return SIZES[profile]


def schemes_of(scheme: str, size: Size) -> tuple[str, ...]:
    """The scheme, then every reference of ``size`` it is not."""
    return (scheme,) + tuple(r for r in size.references if r != scheme)


# ------------------------------------------------------------------------------ the two grids
def _grid_table(path: str, schema, size: Size, schemes: tuple[str, ...], name: str,
                overrides: dict, tasks: tuple[str, ...] | None) -> dict:
    """A sweep file as a table: ``path`` (packaged) as its base at ``size.profile``, its
    ``model.norm`` grid replaced by ``schemes`` (and seeds, tasks by the size's), ``overrides``
    over its sections, its run count the grid's."""
    from resharpen.experiments.training.config import resolve

    base = resolve(path, schema, profile=size.profile)
    search = dict(base["search"])
    search["model.norm"] = {"grid": list(schemes)}
    if size.seeds is not None:
        search["train.seed"] = {"grid": list(size.seeds)}
    if tasks is not None:
        search["task.name"] = {"grid": list(tasks)}
    sweep = {k: v for k, v in base.get("sweep", {}).items() if k != "runs"}
    return {"base": path, "name": name, "search": search, "sweep": sweep, **overrides}


def set_complement_table(scheme: str, size: Size) -> dict:
    """The Set Complement fit grid of the battery (see :func:`_grid_table`)."""
    from resharpen.experiments.set_complement.config import SCHEMA

    return _grid_table(SC_SWEEP, SCHEMA, size, schemes_of(scheme, size), "battery_set_complement",
                       size.set_complement, None)


def language_table(scheme: str, size: Size) -> dict:
    """The language grid of the battery (see :func:`_grid_table`)."""
    from resharpen.experiments.training.next_token_config import SCHEMA

    return _grid_table(LANGUAGE_GRID, SCHEMA, size, schemes_of(scheme, size), "battery_languages",
                       size.languages, size.tasks)


def _finished(root: Path, configs: list[dict]) -> int:
    """How many of ``configs`` have a finished run (its summary.json) under ``root/runs``."""
    return sum((root / "runs" / c["name"] / "summary.json").exists() for c in configs)


def run_set_complement(root: Path, scheme: str, size: Size, workers: int) -> Path:
    from resharpen.experiments.set_complement.sweep import plan, run_sweep

    table = set_complement_table(scheme, size)
    configs = plan(table, None, size.profile)["configs"]
    if _say_done(root, configs, "Set Complement fit grid"):
        return root
    return run_sweep(table, out=root, workers=workers, profile=size.profile)


def run_languages(root: Path, scheme: str, size: Size, workers: int) -> Path:
    from resharpen.experiments.languages.grid import load_grid, run_grid

    table = language_table(scheme, size)
    configs = load_grid(table, size.profile)["configs"]
    if _say_done(root, configs, "language grid"):
        return root
    return run_grid(table, out=root, workers=workers, profile=size.profile)


def _say_done(root: Path, configs: list[dict], what: str) -> bool:
    """Whether every run of a grid is finished (and says so: the step is skipped)."""
    import sys

    done = _finished(root, configs)
    if done == len(configs):
        print(f"battery: {what}: all {done} runs finished in {root}; skipped", file=sys.stderr)
        return True
    return False


# ------------------------------------------------------------------------------ dynamics
def dynamics_profile(size: Size):
    """The trained-dynamics :class:`~resharpen.experiments.dynamics.trained_plan.Sizes` of a size."""
    from resharpen.experiments.dynamics.trained_plan import sizes

    if isinstance(size.dynamics, str):
        return sizes(size.dynamics)
    return replace(sizes("quick"), **size.dynamics)


def _group_key(profile, task: str, scheme: str, depth: int) -> str:
    from resharpen.experiments.common.json_text import dumps_json
    from resharpen.experiments.dynamics.trained_plan import VERSION, group_configs

    text = dumps_json({"version": VERSION, "profile": asdict(profile),
                       "configs": group_configs(profile, task, scheme, depth)},
                      indent=None, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_dynamics(root: Path, scheme: str, size: Size, workers: int) -> list[dict]:
    """Every (task, scheme, depth) group of the dynamics step, each run measured at init and
    trained ({task, scheme, depth, seed, fit_reached, diverged, init, trained, ...}); a group
    whose ``dynamics/<task>_<scheme>_L<depth>.json`` holds its key is read, not trained."""
    import sys

    from resharpen.experiments.common.io import atomic_write_json, ensure_writable_dir
    from resharpen.experiments.common.stored import read_json
    from resharpen.experiments.common.progress import Progress
    from resharpen.experiments.dynamics.trained import train_group_measured
    from resharpen.experiments.dynamics.trained_plan import TASKS
    from resharpen.experiments.training.backends import run_tasks

    profile = dynamics_profile(size)
    # the trained profile's own scheme list does not apply: every battery scheme is trained
    profile = replace(profile, trained_schemes=schemes_of(scheme, size))
    folder = ensure_writable_dir(root)
    groups = [(task, s, depth) for task in (size.dynamics_tasks or TASKS)
              for s in schemes_of(scheme, size) for depth in profile.depths]
    runs, pending = {}, []
    for group in groups:
        path = folder / f"{group[0]}_{group[1]}_L{group[2]}.json"
        key = _group_key(profile, *group)
        cached = read_json(path, "battery dynamics file") if path.exists() else None
        if isinstance(cached, dict) and cached.get("key") == key:
            runs[group] = cached["runs"]
        else:
            pending.append((group, path, key))
    if not pending:
        print(f"battery: dynamics: all {len(groups)} groups finished in {root}; skipped",
              file=sys.stderr)
    lines = Progress("battery dynamics", len(groups), unit="group")
    done = len(groups) - len(pending)
    jobs = [(profile, task, s, depth, True) for (task, s, depth), _, _ in pending]
    for index, result in run_tasks(train_group_measured, jobs, "local", workers):
        group, path, key = pending[index]
        atomic_write_json(path, {"key": key, "runs": result})
        runs[group] = result
        done += 1
        lines.line(done, finished=" ".join(map(str, group)))
    return [{"task": task, "scheme": s, "depth": depth, **r}
            for (task, s, depth) in groups for r in runs[(task, s, depth)]]


# ------------------------------------------------------------------------------ the battery
def _plan(spec: str | None, scheme: str, profile: str) -> dict:
    """What a battery folder holds: scheme, plug-in spec and its file's SHA-256, profile,
    references."""
    digest = None
    if spec and ":" in spec:
        digest = hashlib.sha256(Path(spec.rpartition(":")[0]).expanduser().read_bytes()).hexdigest()
    return {"scheme": scheme, "plugin": spec, "plugin_sha256": digest, "profile": profile,
            "references": list(SIZES[profile].references)}


def check_folder(out: str | Path, plan: dict) -> Path:
    """``out`` as a writable battery folder for ``plan``: ValueError when it holds a battery
    of another scheme, plug-in file version, profile or references, or when its own files are
    not regular files or its steps' folders not folders (nothing is written). The runs of each
    step are checked when the step starts, before it trains (its sweep's checks)."""
    from resharpen.experiments.common.io import check_folder_files, check_writable_target
    from resharpen.experiments.common.stored import read_json

    check_folder_files(out, (PLAN_FILE, REPORT_JSON, REPORT_MARKDOWN), "--out")
    for part in PARTS:
        check_folder_files(Path(out) / part, (), "--out")
    from resharpen.experiments.common.folder_kinds import check_kind

    check_kind(out, "battery", "--out")
    root = check_writable_target(out, "--out")
    path = Path(out) / PLAN_FILE
    if path.exists():
        old = read_json(path, "battery plan")
        if old != plan:
            changed = sorted(k for k in plan if not isinstance(old, dict) or old.get(k) != plan[k])
            raise ValueError(f"--out {str(out)!r} holds another battery (its {', '.join(changed)} "
                             "differ: another scheme, a changed plug-in file or another "
                             "profile); choose another --out")
    return root


def prepare(scheme_spec: str, out: str | Path, profile: str = "quick") -> dict:
    """Every check of a battery before any work: the plug-in loaded (or ``scheme_spec`` a
    registered scheme's name), the profile known, the folder writable and not another
    battery's. Returns the plan (:data:`PLAN_FILE`'s content)."""
    from resharpen.experiments.model.schemes import get, names
    from resharpen.experiments.training.plugins import load_plugin, split_spec

    check_profile(profile)
    source, name = split_spec(scheme_spec)
    if source is None and name in names():
        scheme, spec = name, None
    else:
        scheme, spec = load_plugin(scheme_spec), scheme_spec
    get(scheme)  # a task plug-in is not a scheme
    plan = _plan(spec, scheme, profile)
    check_folder(out, plan)
    return plan


def run_battery(scheme_spec: str, out: str | Path, profile: str = "quick",
                workers: int = 1) -> dict:
    """Run (or resume) the battery of ``scheme_spec`` (``FILE.py:NAME``, an entry point's
    ``NAME``, or a registered scheme's name) into ``out``; return the report
    (:func:`resharpen.experiments.battery.table.report`), also written as ``battery.md`` and
    ``battery.json``."""
    from resharpen.experiments.battery.table import report, to_markdown
    from resharpen.experiments.common.io import (atomic_write_json, atomic_write_text,
                                                 ensure_writable_dir)
    from resharpen.experiments.common.json_text import dumps_json

    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    plan = prepare(scheme_spec, out, profile)
    size, scheme = SIZES[profile], plan["scheme"]
    root = ensure_writable_dir(out, "--out")
    atomic_write_text(root / PLAN_FILE, dumps_json(plan) + "\n")
    sc_part, languages_part, dynamics_part = (root / part for part in PARTS)
    run_set_complement(sc_part, scheme, size, workers)
    run_languages(languages_part, scheme, size, workers)
    dynamics = run_dynamics(dynamics_part, scheme, size, workers)
    result = report(root, plan, dynamics)
    atomic_write_json(root / REPORT_JSON, result)
    atomic_write_text(root / REPORT_MARKDOWN, to_markdown(result) + "\n")
    return result


__all__ = ["REFERENCES", "SIZES", "Size", "schemes_of", "set_complement_table",
           "language_table", "run_dynamics", "prepare", "run_battery"]
