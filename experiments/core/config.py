"""Training and sweep configurations: TOML files, validated against one schema with clear errors.

A training config has four tables (every key optional; defaults below)::

    [task]   vocab, train_len (0 = vocab // 4)
    [model]  d_model, n_layers, n_heads, d_head (0 = d_model // n_heads), norm, norm_kind, mlp,
             d_mlp (0 = 4 d_model), positional, attn_dropout, resid_dropout, init_std
    [train]  steps, batch_size, lr, min_lr_ratio, warmup, schedule, weight_decay, beta1, beta2,
             grad_clip (0 = off), seed, ema, ema_decay, bema_* (see resharpen.experiments.core.averaging),
             eval_every, threads
    [eval]   per_length, seed, threshold

plus optional ``name``, ``base = "other.toml"`` (inherit, then override) and
``[profile.quick]`` / ``[profile.full]`` tables of overrides for the two profiles. A sweep file
adds ``[sweep]`` (runs, seed) and ``[search]``: ``"section.key" = {loguniform = [lo, hi]}``,
``{uniform = [lo, hi]}``, ``{randint = [lo, hi]}`` (inclusive), ``{choice = [...]}`` or
``{grid = [...]}``. Grid keys are enumerated, not drawn: run ``i`` takes point ``i mod N`` of
the cartesian product of all grid lists (N points, keys in sorted order, the last key varying
fastest), so ``runs = N`` is a balanced full grid and ``runs = 2 N`` repeats it with fresh
draws of the random keys.

Unknown keys and out-of-range values raise ValueError listing what is allowed.
"""
from __future__ import annotations

import copy
import math
import random
import sys
from pathlib import Path
from typing import Any

from resharpen.experiments.core.averaging import AVERAGING_KINDS
from resharpen.experiments.core.model import NORM_KINDS, NORM_PLACEMENTS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - python 3.10: the same parser, installed as tomli (pyproject)
    import tomli as tomllib

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"


class Field:
    """One schema entry: a type, a default and either a range or a list of choices."""

    def __init__(self, kind: type, default: Any, lo: float | None = None, hi: float | None = None,
                 choices: tuple | None = None, lo_open: bool = False, hi_open: bool = False):
        self.kind, self.default, self.lo, self.hi = kind, default, lo, hi
        self.choices, self.lo_open, self.hi_open = choices, lo_open, hi_open

    def with_default(self, default: Any) -> "Field":
        """The same type and range with another default (schemas that share a field)."""
        return Field(self.kind, default, self.lo, self.hi, self.choices, self.lo_open, self.hi_open)

    def allowed(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        left = "(" if self.lo_open else "["
        right = ")" if self.hi_open else "]"
        lo = "-inf" if self.lo is None else self.lo
        hi = "inf" if self.hi is None else self.hi
        return f"{self.kind.__name__} in {left}{lo}, {hi}{right}"

    def check(self, key: str, value: Any) -> Any:
        if self.kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        ok_type = isinstance(value, self.kind) and not (self.kind is not bool
                                                         and isinstance(value, bool))
        if not ok_type:
            raise ValueError(f"{key} = {value!r} has the wrong type; allowed: {self.allowed()}")
        if self.choices is not None:
            if value not in self.choices:
                raise ValueError(f"{key} = {value!r} is not allowed; allowed: {self.allowed()}")
            return value
        if self.kind is float and not math.isfinite(value):
            raise ValueError(f"{key} = {value!r} is not finite; allowed: {self.allowed()}")
        too_low = self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo)
        too_high = self.hi is not None and (value >= self.hi if self.hi_open else value > self.hi)
        if too_low or too_high:
            raise ValueError(f"{key} = {value!r} is out of range; allowed: {self.allowed()}")
        return value


SCHEMA: dict[str, dict[str, Field]] = {
    "task": {
        "vocab": Field(int, 64, 4, 4096),
        "train_len": Field(int, 0, 0, 4095),
    },
    "model": {
        "d_model": Field(int, 64, 1, 4096),
        "n_layers": Field(int, 1, 1, 48),
        "n_heads": Field(int, 1, 1, 64),
        "d_head": Field(int, 0, 0, 4096),
        "norm": Field(str, "none", choices=NORM_PLACEMENTS),
        "norm_kind": Field(str, "rms", choices=NORM_KINDS),
        "mlp": Field(str, "none", choices=("none", "gelu", "swiglu")),
        "d_mlp": Field(int, 0, 0, 65536),
        "positional": Field(bool, False, choices=(False, True)),
        "attn_dropout": Field(float, 0.0, 0.0, 1.0, hi_open=True),
        "resid_dropout": Field(float, 0.0, 0.0, 1.0, hi_open=True),
        "init_std": Field(float, 0.02, 0.0, None, lo_open=True),
    },
    "train": {
        "steps": Field(int, 3000, 1, 10**8),
        "batch_size": Field(int, 32, 1, 65536),
        "lr": Field(float, 3e-3, 0.0, 10.0, lo_open=True),
        "min_lr_ratio": Field(float, 0.1, 0.0, 1.0),
        "warmup": Field(int, 100, 0, 10**8),
        "schedule": Field(str, "cosine", choices=("cosine", "linear", "constant")),
        "weight_decay": Field(float, 0.01, 0.0, 10.0),
        "beta1": Field(float, 0.9, 0.0, 1.0, hi_open=True),
        "beta2": Field(float, 0.98, 0.0, 1.0, hi_open=True),
        "grad_clip": Field(float, 1.0, 0.0, None),
        "seed": Field(int, 0, 0, 2**63 - 1),
        "ema": Field(str, "none", choices=AVERAGING_KINDS),
        "ema_decay": Field(float, 0.999, 0.0, 1.0, lo_open=True, hi_open=True),
        "bema_update_freq": Field(int, 1, 1, 10**8),
        "bema_ema_power": Field(float, 0.5, 0.0, 10.0),
        "bema_bias_power": Field(float, 0.2, 0.0, 100.0),
        "bema_lag": Field(float, 10.0, 0.0, None, lo_open=True),
        "bema_update_after": Field(int, 0, 0, 10**8),
        "bema_multiplier": Field(float, 1.0, 0.0, None),
        "eval_every": Field(int, 0, 0, 10**8),
        "threads": Field(int, 1, 0, 1024),
    },
    "eval": {
        "per_length": Field(int, 64, 1, 10**6),
        "seed": Field(int, 1234, 0, 2**63 - 1),
        "threshold": Field(float, 0.05, 0.0, 1.0, lo_open=True, hi_open=True),
    },
}
TOP_KEYS = {"name", "base", "profile", "sweep", "search", *SCHEMA}
SWEEP_SCHEMA = {"runs": Field(int, 16, 1, 10**6), "seed": Field(int, 0, 0, 2**63 - 1),
                "ensemble": Field(int, 1, 1, 1024)}  # most runs per batched ensemble
DISTRIBUTIONS = ("loguniform", "uniform", "randint", "choice", "grid")


def defaults() -> dict:
    return {section: {k: f.default for k, f in fields.items()} for section, fields in SCHEMA.items()}


def _read_toml(path: Path) -> dict:
    if not path.is_file():
        raise FileNotFoundError(f"config file {str(path)!r} does not exist")
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"config file {str(path)!r} is not valid TOML: {exc}") from None


def _merge(into: dict, extra: dict, where: str) -> None:
    """Merge the section tables of ``extra`` into ``into`` (unknown sections rejected)."""
    for section, table in extra.items():
        if section not in SCHEMA:
            raise ValueError(f"unknown section {section!r} in {where}; allowed: {sorted(SCHEMA)}")
        if not isinstance(table, dict):
            raise ValueError(f"{section} in {where} must be a table")
        into.setdefault(section, {}).update(table)


def parse_override(text: str) -> tuple[str, str, Any]:
    """``section.key=value`` -> (section, key, value); the value is read as TOML, else a string."""
    if "=" not in text:
        raise ValueError(f"override {text!r} is not of the form section.key=value")
    dotted, raw = (part.strip() for part in text.split("=", 1))
    if dotted.count(".") != 1:
        raise ValueError(f"override key {dotted!r} must be section.key with section one of "
                         f"{sorted(SCHEMA)}")
    section, key = dotted.split(".")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except Exception:
        value = raw
    return section, key, value


def validate(raw: dict) -> dict:
    """Fill defaults and check every key and value; returns the normalized config."""
    config = defaults()
    for section, table in raw.items():
        if section not in SCHEMA:
            raise ValueError(f"unknown section {section!r}; allowed: {sorted(SCHEMA)}")
        for key, value in table.items():
            if key not in SCHEMA[section]:
                raise ValueError(f"unknown key {section}.{key}; allowed in [{section}]: "
                                 f"{', '.join(SCHEMA[section])}")
            config[section][key] = SCHEMA[section][key].check(f"{section}.{key}", value)
    v = config["task"]["vocab"]
    if config["task"]["train_len"] == 0:
        config["task"]["train_len"] = v // 4
    if config["task"]["train_len"] > v - 1:
        raise ValueError(f"task.train_len = {config['task']['train_len']} must be <= vocab - 1 "
                         f"= {v - 1}")
    m = config["model"]
    if m["d_head"] == 0 and m["d_model"] % m["n_heads"]:
        raise ValueError(f"model.d_model = {m['d_model']} is not divisible by model.n_heads = "
                         f"{m['n_heads']}; set model.d_head")
    if config["train"]["warmup"] > config["train"]["steps"]:
        raise ValueError(f"train.warmup = {config['train']['warmup']} exceeds train.steps = "
                         f"{config['train']['steps']}")
    return config


def _resolve(path: Path, seen: tuple = ()) -> dict:
    """Raw TOML of ``path`` with its ``base`` chain merged (later files override)."""
    path = path.resolve()
    if path in seen:
        raise ValueError(f"config base chain loops at {str(path)!r}")
    data = _read_toml(path)
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise ValueError(f"unknown top-level keys {sorted(unknown)} in {str(path)!r}; "
                         f"allowed: {sorted(TOP_KEYS)}")
    merged: dict = {"profile": {}}
    if "base" in data:
        merged = _resolve(path.parent / data["base"], seen + (path,))
    sections = {k: v for k, v in data.items() if k in SCHEMA}
    for section, table in sections.items():
        merged.setdefault(section, {}).update(table)
    for profile, table in data.get("profile", {}).items():
        if profile not in ("quick", "full"):
            raise ValueError(f"unknown profile {profile!r} in {str(path)!r}; allowed: quick, full")
        for section, values in table.items():
            merged["profile"].setdefault(profile, {}).setdefault(section, {}).update(values)
    for key in ("name", "sweep", "search"):
        if key in data:
            merged[key] = data[key]
    merged.setdefault("name", path.stem)
    return merged


def load(path: str | Path, overrides: list[str] = (), profile: str = "full") -> dict:
    """Load a training config: file, its base chain, the profile's overrides, then ``--set``s.

    Returns ``{"name", "task", "model", "train", "eval"}`` (validated, defaults filled)."""
    if profile not in ("quick", "full"):
        raise ValueError(f"profile {profile!r} is not one of quick, full")
    raw = _resolve(Path(path))
    sections = {k: copy.deepcopy(raw.get(k, {})) for k in SCHEMA}
    _merge(sections, raw["profile"].get(profile, {}), f"[profile.{profile}]")
    for text in overrides:
        section, key, value = parse_override(text)
        _merge(sections, {section: {key: value}}, f"--set {text}")
    config = validate(sections)
    config["name"] = raw["name"]
    return config


def load_sweep(path: str | Path, profile: str = "full") -> tuple[dict, dict, dict]:
    """(base config, sweep settings, search space) of a sweep file, all validated."""
    raw = _resolve(Path(path))
    base = load(path, profile=profile)
    settings = {k: f.default for k, f in SWEEP_SCHEMA.items()}
    for key, value in raw.get("sweep", {}).items():
        if key not in SWEEP_SCHEMA:
            raise ValueError(f"unknown key sweep.{key}; allowed: {', '.join(SWEEP_SCHEMA)}")
        settings[key] = SWEEP_SCHEMA[key].check(f"sweep.{key}", value)
    space = raw.get("search", {})
    if not space:
        raise ValueError(f"sweep file {str(path)!r} has no [search] table")
    for dotted, spec in space.items():
        section, _, key = dotted.partition(".")
        if section not in SCHEMA or key not in SCHEMA[section]:
            raise ValueError(f"search key {dotted!r} is not a config key; allowed: "
                             + ", ".join(f"{s}.{k}" for s in SCHEMA for k in SCHEMA[s]))
        if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in DISTRIBUTIONS:
            raise ValueError(f"search.{dotted} must be one of {{loguniform = [lo, hi]}}, "
                             "{uniform = [lo, hi]}, {randint = [lo, hi]}, {choice = [...]}, "
                             "{grid = [...]}")
        (dist, args), = spec.items()
        if dist not in ("choice", "grid") and (not isinstance(args, list) or len(args) != 2
                                 or not args[0] <= args[1]):
            raise ValueError(f"search.{dotted}: {dist} needs [lo, hi] with lo <= hi, got {args!r}")
        if dist == "loguniform" and args[0] <= 0:
            raise ValueError(f"search.{dotted}: loguniform needs lo > 0, got {args[0]!r}")
        if dist in ("choice", "grid") and (not isinstance(args, list) or not args):
            raise ValueError(f"search.{dotted}: {dist} needs a non-empty list, got {args!r}")
        if dist == "grid" and len(set(map(repr, args))) != len(args):
            raise ValueError(f"search.{dotted}: grid values repeat: {args!r}")
        for value in args:  # every endpoint / choice must be a valid value
            trial = copy.deepcopy({s: base[s] for s in SCHEMA})
            trial[section][key] = _cast(SCHEMA[section][key], value)
            validate(trial)
    return base, settings, space


def _cast(field: Field, value: Any) -> Any:
    if field.kind is int and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def sample_value(dist: str, args: list, rng: random.Random) -> Any:
    if dist == "loguniform":
        return math.exp(rng.uniform(math.log(args[0]), math.log(args[1])))
    if dist == "uniform":
        return rng.uniform(args[0], args[1])
    if dist == "randint":
        return rng.randint(int(args[0]), int(args[1]))
    return args[rng.randrange(len(args))]


def grid_points(space: dict) -> list[dict]:
    """The cartesian product of the ``grid`` keys of ``space`` (sorted keys, last fastest);
    ``[{}]`` when there are none."""
    points = [{}]
    for dotted in sorted(space):
        (dist, args), = space[dotted].items()
        if dist == "grid":
            points = [dict(point, **{dotted: value}) for point in points for value in args]
    return points


def sample_configs(base: dict, space: dict, runs: int, seed: int) -> list[dict]:
    """``runs`` configs from ``space``: grid keys enumerated (run i takes grid point i mod N),
    the others drawn by ``random.Random(seed)``; the same list on any machine (draws are made
    in sorted key order, one run after the other)."""
    rng = random.Random(seed)
    points = grid_points(space)
    configs = []
    for index in range(runs):
        config = copy.deepcopy(base)
        for dotted in sorted(space):
            (dist, args), = space[dotted].items()
            section, key = dotted.split(".")
            value = (points[index % len(points)][dotted] if dist == "grid"
                     else sample_value(dist, args, rng))
            config[section][key] = _cast(SCHEMA[section][key], value)
        config = validate({s: config[s] for s in SCHEMA}) | {"name": f"{base['name']}-{index:04d}"}
        configs.append(config)
    return configs
