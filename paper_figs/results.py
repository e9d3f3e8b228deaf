"""Where the figures find their trained results, without training: each function returns the
folder of finished results or raises :class:`~resharpen.paper_figs.MissingResults` with the one
command that makes them."""
from __future__ import annotations

from pathlib import Path

from resharpen.paper_figs import MissingResults


def set_complement_sweep(name: str, profile: str) -> Path:
    """The finished sweep ``experiments/configs/set_complement/<name>.toml`` of ``profile``
    (``out/sweeps/<name>``, or ``<name>-quick`` for the quick profile); in the full profile,
    when ``out/`` lacks it, the archived sweep (``results/full/sweeps/<name>``), read in place:
    its runs' measured tables stand in for their weights."""
    from resharpen.experiments.training.archive import archived_sweep
    from resharpen.experiments.training.config import result_folder
    from resharpen.experiments.training.sweep import read_table

    root = result_folder("sweeps", name, profile)
    if (root / "table.jsonl").exists() and read_table(root):
        return root
    archived = archived_sweep(name) if profile == "full" else None
    if archived is not None:
        return archived
    raise MissingResults(f"no finished sweep in {root} (nor in the archive, results/full)",
                         f"resharpen sweep set_complement/{name} --profile {profile} --workers 2")


def language_grid(profile: str) -> Path:
    """The profile's own finished language grid, as the claims choose it: the full grid when
    every run of it is finished (``out/sweeps/langs``, else the archive's copy), the quick grid
    (else the tiny grid the tests train) in the quick profile; never a part of a grid."""
    from resharpen.experiments.training.archive import archived_sweep
    from resharpen.experiments.training.sweep import load_runs
    from resharpen.experiments.languages.grid import default_root, grid_file, load_grid

    planned = load_grid(grid_file(profile), profile)
    places = [default_root(planned["name"])]
    if profile == "full":
        places.append(archived_sweep(planned["name"]))
    else:
        places.append(default_root("langs-tiny"))
    for root in places:
        wanted = len(planned["configs"]) if root is places[0] or profile == "full" else 1
        if root is not None and root.exists() and len(load_runs(root)) >= wanted:
            return root
    raise MissingResults(f"no finished language grid for the {profile} profile",
                         f"resharpen langs run --profile {profile}")


def finished_placements(profile: str) -> tuple[Path, set, int, int]:
    """At full size, while the language grid is not finished: (its folder, the (task,
    placement) groups whose planned runs have all finished there, its finished planned runs,
    the planned runs), from ``out/sweeps/<grid>`` or the archive's copy, whichever holds more
    complete groups (``out/`` on a tie); MissingResults when no group is complete. A figure
    drawn from it shows whole groups only, never a group with some seeds missing."""
    from resharpen.experiments.training.archive import archived_sweep
    from resharpen.experiments.training.sweep import load_runs
    from resharpen.experiments.languages.grid import default_root, grid_file, load_grid

    planned = load_grid(grid_file(profile), profile)
    wanted: dict = {}
    for config in planned["configs"]:
        wanted.setdefault((config["task"]["name"], config["model"]["norm"]), set()).add(
            config["name"])
    names = {c["name"] for c in planned["configs"]}
    best = None
    for root in (default_root(planned["name"]), archived_sweep(planned["name"])):
        if root is None or not root.exists():
            continue
        finished = names & {run["config"]["name"] for run in load_runs(root)}
        complete = {key for key, runs in wanted.items() if runs <= finished}
        if best is None or len(complete) > len(best[1]):
            best = (root, complete, len(finished))
    if best is None or not best[1]:
        raise MissingResults(f"no placement of the {profile} language grid has finished all "
                             "its runs", f"resharpen langs run --profile {profile}")
    return best[0], best[1], best[2], len(names)


def collapse_runs(profile: str) -> list[dict]:
    """The finished runs of the collapse learning-rate sweep (out/collapse_train, else the
    archive's copy results/full/collapse_train), loaded."""
    import json

    from resharpen.experiments.collapse.train import (ARCHIVED, OUT, read_finished, run,
                                                      sweep_configs)

    configs = sweep_configs(profile)
    for config in configs:
        folders = (Path(OUT) / config["name"], ARCHIVED / config["name"])
        if not any((found := read_finished(folder)) is not None
                   and found[0] == json.loads(json.dumps(config)) for folder in folders):
            raise MissingResults(f"no finished collapse run {folders[0]} (nor in the archive)",
                                 f"resharpen collapse train --profile {profile}")
    return [run(config, OUT) for config in configs]  # every one finished: loads, never trains


def trained_set(profile: str) -> list[dict]:
    """The trained-dynamics set of ``profile`` (:mod:`resharpen.experiments.dynamics.trained`)
    from its cache (``out/dyn_trained``, at full size else the archive's copy), never trained
    here: MissingResults naming the command when a group is on neither."""
    from resharpen.experiments.dynamics.trained import trained_set as cached_set

    try:
        return cached_set(profile, cached_only=True)
    except LookupError as error:
        raise MissingResults(str(error),
                             f"resharpen dynamics trained --profile {profile}") from None


def premise_runs(profile: str, name: str, claim_id: str, trained: bool = False) -> list[dict]:
    """Premise set ``name`` as measured (``trained``: as trained) for claim ``claim_id`` (out/,
    else the archive at full size), read only: MissingResults with the command that measures
    or trains it when it is not there."""
    from resharpen.experiments.dynamics.premise_sets import premise_set

    try:
        return premise_set(profile, name, cached_only=True, trained=trained)
    except LookupError as error:
        raise MissingResults(str(error), f"resharpen verify --only {claim_id} --profile "
                                         f"{profile}") from None
