"""What a sweep or task grid actually ran, in one line for a claim's detail.

An experiment claim's statement names the setting of the full experiment ("12000 steps,
16 seeds, v = 32"); a quick run decides on far less. :func:`describe_runs` reads the folder the
claim decided on (``sweep.json``'s identity and every finished run's ``config.json``) and says
what ran: the folder, its profile, the number of finished runs, and the distinct values of the
settings that size an experiment (steps, seeds, vocabulary, width, layers, tasks; a task
vocabulary of 0, the language tasks' "the task's own", is not reported).
"""
from __future__ import annotations

import json
from pathlib import Path

# (section, key, label) of the settings a detail reports, when the runs have them.
REPORTED = (("task", "name", "tasks"), ("task", "vocab", "v"), ("task", "train_len", "L_train"),
            ("model", "d_model", "d_model"), ("model", "n_layers", "layers"),
            ("train", "steps", "steps"))


def _values(values: list) -> str:
    """``16`` for one distinct value, ``16..32 (3 values)`` for numbers, ``a, b`` for names."""
    distinct = sorted(set(values), key=lambda v: (isinstance(v, str), v))
    if len(distinct) == 1:
        return str(distinct[0])
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in distinct):
        return f"{distinct[0]}..{distinct[-1]} ({len(distinct)} values)"
    return ", ".join(map(str, distinct))


def describe_runs(root: str | Path) -> str:
    """One line: what the finished runs under ``root`` are (see the module docstring)."""
    from resharpen.experiments.core.sweep import load_runs

    root = Path(root)
    identity = {}
    if (root / "sweep.json").exists():
        identity = json.loads((root / "sweep.json").read_text()).get("identity", {})
    configs = [run["config"] for run in load_runs(root)]
    parts = [f"ran {root.name}", f"profile {identity.get('profile', 'unknown')}",
             f"{len(configs)} finished runs"]
    if configs:
        seeds = {config.get("train", {}).get("seed") for config in configs}
        seeds.discard(None)
        if seeds:
            parts.append(f"{len(seeds)} seeds")
        for section, key, label in REPORTED:
            values = [config[section][key] for config in configs
                      if config.get(section, {}).get(key) not in (None, "")
                      and not (key == "vocab" and config[section][key] == 0)]  # 0: the task's own
            if values:
                parts.append(f"{label} {_values(values)}")
    return "; ".join(parts)
