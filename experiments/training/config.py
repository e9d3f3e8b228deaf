"""Run configurations, read one way: one TOML reader, one ``--set`` parser, one way profiles
apply, one schema machinery, one output root. Imports nothing heavy (the command line uses it).

A run config is a dict of *sections* (tables), each a dict of keys checked by a :class:`Field`
(type, default, range or choices), plus ``name``. Which sections and keys a trainer reads is
its :class:`Schema`: the ``[model]`` and ``[train]`` keys are shared by every trainer
(:data:`resharpen.experiments.training.loop.MODEL_FIELDS`, ``TRAIN_FIELDS``), ``[task]`` and
``[eval]`` belong to the task.

A config file (TOML) holds the sections, optional ``name``, ``base = "other.toml"`` (inherit,
then override) and ``[profile.quick]`` / ``[profile.full]`` tables of overrides. A config is
made in this order, later winning:

    the schema's defaults  <  base file  <  base's [profile.<profile>]
                           <  the file   <  its own [profile.<profile>]  <  --set

(a base of a base comes first the same way): a file's own value wins over the profile table of
the file it inherits from, and its own profile table wins over both.

``--set section.key=value`` reads the value as a TOML scalar (``0.1``, ``true``, ``"post"``) and
else as a bare string (``post``). Profiles are ``quick`` and ``full``
(:data:`resharpen.experiments.common.profiles.PROFILES`); a profile table merges over its own file
(:func:`resolve`; a single file without a base chain, such as a language grid file, uses
:func:`apply_profile`).

A sweep file adds ``[sweep]`` (runs, seed, ensemble) and ``[search]``:
``"section.key" = {loguniform = [lo, hi]}``, ``{uniform = [lo, hi]}``, ``{randint = [lo, hi]}``
(inclusive), ``{choice = [...]}`` or ``{grid = [...]}``. Grid keys are enumerated, not drawn: run
``i`` takes point ``i mod N`` of the cartesian product of all grid lists (N points, keys in sorted
order, the last key varying fastest), so ``runs = N`` is a balanced full grid and ``runs = 2 N``
repeats it with fresh draws of the random keys.

A config file is named by a path or by its name among the packaged configs (:func:`find_config`):
a path that exists wins; otherwise ``set_complement/base`` (with or without ``.toml``, with or
without a leading ``experiments/configs/``) is looked up in :data:`CONFIG_DIR`, the configs that
ship inside the package, so it works from any working directory. :func:`list_configs` lists
them (``resharpen configs``).

Results go under :data:`OUT_ROOT` (``out/``, relative to the working directory) unless the user
names another folder: ``out/runs/<name>``, ``out/sweeps/<name>``, ``out/<experiment>``.

Unknown sections and keys and out-of-range values raise ValueError naming what is allowed.
"""
from __future__ import annotations

import copy
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from resharpen.experiments.common.names import check_name
from resharpen.experiments.common.profiles import PROFILES, check_profile

from resharpen.experiments.common.toml_files import (MAX_CONFIG_BYTES,  # noqa: F401
                                                     parse_value, read_toml)

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
OUT_ROOT = Path("out")


# ----------------------------------------------------------------------------- output root
def output_folder(*parts: str) -> Path:
    """``out/<parts>``: the default place of a result (the user's ``--out`` replaces it)."""
    return OUT_ROOT.joinpath(*parts)


def run_folder(name: str) -> Path:
    """Default folder of one training run: ``out/runs/<name>`` (``name`` a safe name)."""
    return output_folder("runs", check_name(name, "run name"))


def sweep_folder(name: str) -> Path:
    """Default folder of a sweep or grid: ``out/sweeps/<name>`` (``name`` a safe name)."""
    return output_folder("sweeps", check_name(name, "sweep name"))


def profiled_name(name: str, profile: str) -> str:
    """A result's folder name in ``profile``: ``name`` itself at full size, ``name-<profile>``
    otherwise (``fit_placements_v32-quick``), so the two profiles never share a folder."""
    check_profile(profile)
    return name if profile == "full" else f"{name}-{profile}"


def result_folder(study: str, name: str, profile: str) -> Path:
    """The one default place of a result: ``out/<study>/<name>`` at full size and
    ``out/<study>/<name>-<profile>`` otherwise (``result_folder("sweeps", "langs", "quick")`` is
    ``out/sweeps/langs-quick``)."""
    return output_folder(check_name(study, "study"), check_name(profiled_name(name, profile),
                                                                 "result name"))


def folder_profile(folder: str | Path) -> str:
    """The profile a result folder was made in, read from its name (:func:`profiled_name`)."""
    name = Path(folder).name
    return next((p for p in PROFILES if p != "full" and name.endswith(f"-{p}")), "full")


# ----------------------------------------------------------------------------- configs by name
CONFIG_PREFIX = "experiments/configs/"
"""The packaged configs' folder as written from the repository root; a name given with it
(``experiments/configs/set_complement/base.toml``) resolves from any working directory too."""


def find_config(name: str | Path, what: str = "config file") -> Path:
    """The config file ``name`` names: the path itself when it exists (a user's own file, or a
    packaged one named by its path); else the packaged config of that name under
    :data:`CONFIG_DIR`, with or without ``.toml`` and with or without a leading
    ``experiments/configs/`` (``set_complement/fit_placements_v32``). A path that exists
    always wins over a packaged config of the same name. FileNotFoundError naming ``name``
    (``what``) when neither exists; a folder is returned as is (the reader refuses it)."""
    path = Path(name)
    if path.exists():
        return path
    text = str(name).replace("\\", "/")
    candidates = []
    for stem in (text, text[len(CONFIG_PREFIX):] if text.startswith(CONFIG_PREFIX) else None):
        if stem and not Path(stem).is_absolute() and ".." not in Path(stem).parts:
            candidates += [CONFIG_DIR / stem] + ([] if stem.endswith(".toml")
                                                 else [CONFIG_DIR / f"{stem}.toml"])
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    from resharpen.experiments.common.cli_args import did_you_mean

    packaged = [p.relative_to(CONFIG_DIR).with_suffix("").as_posix()
                for p in CONFIG_DIR.rglob("*.toml")]
    hint = did_you_mean(text[len(CONFIG_PREFIX):] if text.startswith(CONFIG_PREFIX) else text,
                        packaged)
    raise FileNotFoundError(f"{what} {str(name)!r} does not exist (neither a file here nor a "
                            f"packaged config; `resharpen configs` lists those){hint}")


def config_description(path: str | Path) -> str:
    """The first comment line of a config file, without its ``#`` ("" when it has none): what
    ``resharpen configs`` prints. Every packaged config opens with one complete sentence for a
    reader there (tests/core/test_user_text.py holds them to it)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return ""
    for line in lines:
        if line.strip().startswith("#"):
            return line.strip().lstrip("#").strip()
        if line.strip():
            break
    return ""


def list_configs() -> list[dict]:
    """Every packaged config: {name, path, command, description}, by name. ``name`` is the path
    relative to :data:`CONFIG_DIR` without ``.toml`` (what ``resharpen train NAME`` takes);
    ``command`` the command that reads it: ``sweep`` for a file with a ``[search]`` table (its own
    or its base's), ``train`` for another Set Complement config, ``langs run --grid`` for a
    language grid, ``collapse train`` for the collapse sweep."""
    out = []
    for path in sorted(CONFIG_DIR.rglob("*.toml")):
        name = path.relative_to(CONFIG_DIR).with_suffix("").as_posix()
        family = name.split("/", 1)[0]
        if family == "languages":
            command = "langs run --grid"
        elif family == "collapse":
            command = "collapse train"
        else:
            command = "sweep" if _has_search(path) else "train"
        out.append({"name": name, "path": path, "command": command,
                    "description": config_description(path)})
    return out


def _has_search(path: Path, depth: int = 0) -> bool:
    """Whether a config file or its ``base`` chain has a ``[search]`` table."""
    try:
        data = read_toml(path)
    except (OSError, ValueError):
        return False
    if "search" in data:
        return True
    base = data.get("base")
    return isinstance(base, str) and depth < 16 and _has_search(path.parent / base, depth + 1)


# ----------------------------------------------------------------------------- TOML and --set
def parse_set(text: str) -> tuple[str, str, Any]:
    """``section.key=value`` -> (section, key, value) (:func:`parse_value`)."""
    if "=" not in text:
        raise ValueError(f"--set {text!r} is not of the form section.key=value")
    dotted, raw = (part.strip() for part in text.split("=", 1))
    if dotted.count(".") != 1 or not all(dotted.split(".")):
        raise ValueError(f"--set key {dotted!r} must be section.key (e.g. model.norm)")
    section, key = dotted.split(".")
    return section, key, parse_value(raw)


def parse_sets(items: list[str] | tuple[str, ...]) -> dict:
    """``--set`` strings -> ``{section: {key: value}}`` (a later one wins)."""
    out: dict = {}
    for text in items:
        section, key, value = parse_set(text)
        out.setdefault(section, {})[key] = value
    return out


def deep_merge(into: dict, extra: dict) -> dict:
    """Merge ``extra`` into ``into`` in place, table by table (a non-table value replaces);
    returns ``into``."""
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            deep_merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)
    return into


def profile_tables(tables: object, where: str, sections: bool = False) -> dict:
    """``tables`` if it is a table of ``[profile.<name>]`` tables with known names (and, when
    ``sections``, each of those a table of section tables); ValueError naming ``where``."""
    if not isinstance(tables, dict):
        raise ValueError(f"profile in {where} must be a table of [profile.<name>] tables")
    for name, table in tables.items():
        if name not in PROFILES:
            raise ValueError(f"unknown profile {name!r} in {where}; allowed: "
                             f"{', '.join(PROFILES)}")
        if not isinstance(table, dict) or (
                sections and not all(isinstance(v, dict) for v in table.values())):
            raise ValueError(f"profile.{name} in {where} must be a table"
                             + (" of section tables (e.g. task.vocab = 16)" if sections else ""))
    return tables


def apply_profile(raw: dict, profile: str, where: str = "the config") -> dict:
    """``raw`` without its ``profile`` tables, with ``[profile.<profile>]`` merged over it
    (:func:`deep_merge`); ValueError for an unknown profile here or in ``raw``."""
    check_profile(profile)
    tables = profile_tables(raw.get("profile", {}), where)
    out = {key: copy.deepcopy(value) for key, value in raw.items() if key != "profile"}
    return deep_merge(out, tables.get(profile, {}))


# ----------------------------------------------------------------------------- schema
class Field:
    """One schema entry: a type, a default and either a range or a list of choices."""

    def __init__(self, kind: type, default: Any, lo: float | None = None, hi: float | None = None,
                 choices: tuple | None = None, lo_open: bool = False, hi_open: bool = False):
        self.kind, self.default, self.lo, self.hi = kind, default, lo, hi
        self._choices, self.lo_open, self.hi_open = choices, lo_open, hi_open

    @property
    def choices(self) -> tuple | None:
        """The allowed values: a tuple, or read when asked from a function (a registry that a
        plug-in may extend)."""
        return tuple(self._choices()) if callable(self._choices) else self._choices

    def with_default(self, default: Any) -> "Field":
        """The same type and range with another default (a trainer's own default)."""
        return Field(self.kind, default, self.lo, self.hi, self._choices, self.lo_open, self.hi_open)

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

    def cast(self, value: Any) -> Any:
        """An integral float for an int field becomes an int (search-space draws)."""
        if self.kind is int and isinstance(value, float) and value.is_integer():
            return int(value)
        return value


def pick_fields(fields: dict[str, Field], **defaults: Any) -> dict[str, Field]:
    """The fields named in ``defaults``, in that order, each with that default."""
    unknown = sorted(set(defaults) - set(fields))
    if unknown:
        raise ValueError(f"no such field {unknown[0]!r}; fields: {', '.join(fields)}")
    return {key: fields[key].with_default(value) for key, value in defaults.items()}


def _no_rules(config: dict) -> None:
    return None


RENAMED_KEYS = {"train.until_id_invalid_mass": "fit.until_id_invalid_mass"}
"""Keys written another way now (old spelling -> new): the stopping rule is one key for every
trainer, in the ``[fit]`` table."""


def check_renamed(dotted: str, where: str = "") -> None:
    """ValueError naming the new spelling when ``dotted`` (``section.key``) is a key's old one
    (:data:`RENAMED_KEYS`); ``where``: the file or table it was written in, for the message."""
    if dotted in RENAMED_KEYS:
        new = RENAMED_KEYS[dotted]
        raise ValueError(f"{dotted}{f' in {where}' if where else ''} is now written {new} "
                         f"(the [{new.split('.')[0]}] table): rename the key")


@dataclass(frozen=True)
class Schema:
    """The sections of a run config, each a table of fields, and ``rules``: a function that
    fills derived defaults and checks limits spanning fields on a filled config (in place)."""

    sections: dict[str, dict[str, Field]]
    rules: Callable[[dict], None] = field(default=_no_rules)

    def defaults(self) -> dict:
        return {section: {key: f.default for key, f in fields.items()}
                for section, fields in self.sections.items()}

    def validate(self, raw: dict) -> dict:
        """The defaults updated by ``raw`` ({section: {key: value}}), every key and value
        checked, then :attr:`rules`; returns the normalized config (sections only)."""
        config = self.defaults()
        for section, table in raw.items():
            if section not in self.sections:
                raise ValueError(f"unknown section {section!r}; allowed: "
                                 f"{', '.join(self.sections)}")
            if not isinstance(table, dict):
                raise ValueError(f"section {section!r} must be a table, got {table!r}")
            fields = self.sections[section]
            for key, value in table.items():
                if key not in fields:
                    check_renamed(f"{section}.{key}")
                    raise ValueError(f"unknown key {section}.{key}; allowed in [{section}]: "
                                     f"{', '.join(fields)}")
                config[section][key] = fields[key].check(f"{section}.{key}", value)
        self.rules(config)
        return config


# ----------------------------------------------------------------------------- config files
SWEEP_FIELDS = {"runs": Field(int, 16, 1, 10**6), "seed": Field(int, 0, 0, 2**63 - 1),
                "ensemble": Field(int, 1, 1, 1024)}  # most runs per batched ensemble
DISTRIBUTIONS = ("loguniform", "uniform", "randint", "choice", "grid")


def when_tables(whens: object, where: str) -> list[dict]:
    """The ``[[when]]`` tables of a sweep file: each holds conditions (quoted dotted keys,
    ``"task.name" = "othello"`` or a list of allowed values) and section tables applied to
    every run whose config meets all of them (``model = { n_layers = 4 }`` or ``[when.model]``).
    ValueError naming ``where`` for anything else."""
    if not isinstance(whens, list) or not all(isinstance(w, dict) for w in whens):
        raise ValueError(f"when in {where} must be an array of tables ([[when]]), got {whens!r}"
                         [:200])
    for when in whens:
        conditions = [key for key in when if "." in key]
        if not conditions:
            raise ValueError(f"a [[when]] table in {where} has no condition (a quoted dotted "
                             f"key such as \"task.name\" = \"othello\"): {when!r}"[:200])
        stray = [key for key, value in when.items() if "." not in key and not isinstance(value, dict)]
        if stray:
            raise ValueError(f"[[when]] key {stray[0]!r} in {where} must be a section table or a "
                             "quoted dotted condition")
    return copy.deepcopy(whens)


def when_applies(when: dict, config: dict) -> bool:
    """Whether ``config`` meets every condition of a ``[[when]]`` table (a value, or a list of
    values one of which it must equal)."""
    for dotted, wanted in when.items():
        if "." not in dotted:
            continue
        section, _, key = dotted.partition(".")
        value = config.get(section, {}).get(key)
        if not (value in wanted if isinstance(wanted, list) else value == wanted):
            return False
    return True


def resolve(path: str | Path, schema: Schema, seen: tuple = (), profile: str | None = None) -> dict:
    """Raw TOML of ``path`` with its ``base`` chain merged (later files override, section by
    section; the ``[profile.*]`` tables of the chain merged the same way into ``profile``).

    With ``profile``, each file's own ``[profile.<profile>]`` table is applied right after that
    file's sections, so along the chain base < base's profile table < child < child's profile
    table: a child's own value wins over its base's profile table (``long_runs_v32``'s
    ``vocab = 32`` over ``long_runs``'s ``[profile.quick] task.vocab = 16``), and the child's own
    profile table wins over both. ``path`` may name a packaged config (:func:`find_config`),
    or be the parsed table itself (a dict, its ``base`` relative to the configs folder)."""
    if profile is not None:
        check_profile(profile)
    if isinstance(path, dict):
        data, path = copy.deepcopy(path), CONFIG_DIR / "<table>"
    else:
        path = (find_config(path) if not seen else Path(path)).resolve()
        if path in seen:
            raise ValueError(f"config base chain loops at {str(path)!r}")
        data = read_toml(path)
    if not data:  # an empty file would silently train with every default (at full size)
        raise ValueError(f"config file {str(path)!r} is empty: name a base config (base = "
                         "\"base.toml\") or set the tables you mean ([task], [model], [train])")
    top_keys = {"name", "base", "profile", "sweep", "search", "when", *schema.sections}
    unknown = set(data) - top_keys
    if unknown:
        old = " (sweep axes are [search] grids, \"model.norm\" = { grid = [...] }, and a " \
              "task's own values [[when]] tables: docs/usage.md, Sweep files)" \
            if unknown & {"tasks", "norms", "seeds", "lrs", "override"} else ""
        raise ValueError(f"unknown top-level keys {sorted(unknown)} in {str(path)!r}; "
                         f"allowed: {sorted(top_keys)}{old}")
    for key in ("sweep", "search"):
        if key in data and not isinstance(data[key], dict):
            raise ValueError(f"{key} in {str(path)!r} must be a table ([{key}]), got "
                             f"{type(data[key]).__name__} {data[key]!r}")
    merged: dict = {"profile": {}, "when": []}
    if "base" in data:
        if not isinstance(data["base"], str):
            raise ValueError(f"base in {str(path)!r} must be a string naming a TOML file "
                             f"(base = \"base.toml\"), got {type(data['base']).__name__} "
                             f"{data['base']!r}")
        merged = resolve(path.parent / data["base"], schema, seen + (path,), profile)
    for section, table in data.items():
        if section in schema.sections:
            if not isinstance(table, dict):
                raise ValueError(f"{section} in {str(path)!r} must be a table")
            merged.setdefault(section, {}).update(table)
    for key in ("name", "sweep", "search"):
        if key in data:
            merged[key] = copy.deepcopy(data[key])
    merged["when"] = merged["when"] + when_tables(data.get("when", []), repr(str(path)))
    raw_tables = data.get("profile", {})
    if isinstance(raw_tables, dict):  # [[profile.<name>.when]]: conditional tables of a profile
        raw_tables = {name: dict(table) if isinstance(table, dict) else table
                      for name, table in raw_tables.items()}
        for name, table in raw_tables.items():
            if isinstance(table, dict) and "when" in table:
                whens = when_tables(table.pop("when"), f"profile.{name} in {str(path)!r}")
                if name == profile:
                    merged["when"] = merged["when"] + whens
    tables = profile_tables(raw_tables, repr(str(path)), sections=True)
    check_profile_keys(tables, schema, repr(str(path)))
    for name, table in tables.items():
        for section, values in table.items():
            merged["profile"].setdefault(name, {}).setdefault(section, {}).update(values)
            if name == profile:  # this file's profile table, over this file (and its base);
                # a sweep file's profile may also set sweep.* and replace search entries
                merged.setdefault(section, {}).update(values)
    merged.setdefault("name", path.stem)
    return merged


def check_profile_keys(tables: dict, schema: Schema, where: str) -> None:
    """ValueError naming the first unknown section or key of any ``[profile.<name>]`` table
    (every profile's, not only the one in use: a typo in ``[profile.quick]`` is refused when
    running ``full`` too), or a value a field refuses. A profile table may hold the run config's
    sections and, in a sweep file, ``sweep`` and ``search``."""
    for name, table in tables.items():
        for section, values in table.items():
            if section == "sweep":
                fields = SWEEP_FIELDS
            elif section in schema.sections:
                fields = schema.sections[section]
            elif section == "search":
                continue  # its keys and distributions are checked with the [search] table
            else:
                raise ValueError(f"unknown section profile.{name}.{section} in {where}; allowed: "
                                 + ", ".join([*schema.sections, "sweep", "search"]))
            for key, value in values.items():
                if key not in fields:
                    check_renamed(f"{section}.{key}", f"[profile.{name}] of {where}")
                    raise ValueError(f"unknown key profile.{name}.{section}.{key} in {where}; "
                                     f"allowed in [{section}]: {', '.join(fields)}")
                fields[key].check(f"profile.{name}.{section}.{key}", value)


SWEEP_TABLES = ("search", "sweep", "when")
"""The tables of a sweep file (``[search]``, ``[sweep]``, ``[[when]]``): refused in a run config,
where they would be ignored."""


def check_run_config(raw: dict, where: str) -> None:
    """ValueError when a resolved run config (its file or its base chain, its profile tables
    included) holds a sweep file's tables: ``train`` would ignore them silently."""
    found = [f"[{key}]" if key != "when" else "[[when]]" for key in SWEEP_TABLES if raw.get(key)]
    found += sorted({f"[profile.{name}.{section}]" for name, table in raw.get("profile", {}).items()
                     for section in table if section in SWEEP_TABLES})
    if found:
        raise ValueError(f"config {where} holds {', '.join(found)}, the tables of a sweep file, "
                         "which a single run ignores; run it with `resharpen sweep`, or remove "
                         "them")


def load(path: str | Path | dict, schema: Schema, overrides: list[str] | tuple[str, ...] = (),
         profile: str = "full", sweep_file: bool = False) -> dict:
    """A run config from a file, later winning: defaults < each file of the base chain, base
    first, each followed by its own ``[profile.<profile>]`` table (:func:`resolve`) <
    ``--set`` overrides. Returns the validated sections and ``name`` (last). A sweep file's
    tables are refused (:func:`check_run_config`) unless ``sweep_file`` (the base config of a
    sweep, :func:`load_sweep`)."""
    check_profile(profile)
    raw = resolve(path, schema, profile=profile)
    if not sweep_file:
        check_run_config(raw, repr(str(path)) if not isinstance(path, dict) else "table")
    sections = {key: value for key, value in raw.items() if key in schema.sections}
    deep_merge(sections, parse_sets(overrides))
    config = schema.validate(sections)
    config["name"] = check_name(raw["name"], f"name in {str(path)!r}")
    return config


def load_sweep(path: str | Path | dict, schema: Schema, profile: str = "full") -> tuple[dict, dict, dict]:
    """(base config, sweep settings, search space) of a sweep file, all validated.

    The one sweep-file format of every slice: the run config's sections (or ``base = "file"``),
    ``[search]`` (per dotted config key a ``grid`` enumerated as a cartesian product, or a
    distribution drawn per run), ``[sweep]`` (``runs``: by default the number of grid points
    when every axis is a grid, else 16; ``seed`` of the draws; ``ensemble``: the most runs
    trained as one batched ensemble), ``[[when]]`` tables (:func:`when_tables`, e.g. one task's
    own lengths and model; ``settings["when"]``) and ``[profile.<name>]`` tables over all of
    it (``[[profile.<name>.when]]`` adds conditional tables for that profile)."""
    raw = resolve(path, schema, profile=profile)
    base = load(path, schema, profile=profile, sweep_file=True)
    settings = {k: f.default for k, f in SWEEP_FIELDS.items()}
    for key, value in raw.get("sweep", {}).items():
        if key not in SWEEP_FIELDS:
            raise ValueError(f"unknown key sweep.{key}; allowed: {', '.join(SWEEP_FIELDS)}")
        settings[key] = SWEEP_FIELDS[key].check(f"sweep.{key}", value)
    space = raw.get("search", {})
    if not space:
        raise ValueError(f"sweep file {str(path)!r} has no [search] table")
    if "runs" not in raw.get("sweep", {}) and all(
            isinstance(spec, dict) and "grid" in spec for spec in space.values()):
        settings["runs"] = len(grid_points(space))
    settings["when"] = raw.get("when", [])
    for when in settings["when"]:
        for dotted, value in when.items():
            if "." in dotted:
                section, _, key = dotted.partition(".")
                if section not in schema.sections or key not in schema.sections[section]:
                    check_renamed(dotted, f"a [[when]] table of {str(path)!r}")
                    raise ValueError(f"[[when]] condition {dotted!r} in {str(path)!r} is not a "
                                     "config key")
            elif dotted not in schema.sections:
                raise ValueError(f"[[when]] table {dotted!r} in {str(path)!r} is not a config "
                                 f"section; allowed: {', '.join(schema.sections)}")
            else:
                stray = sorted(set(value) - set(schema.sections[dotted]))
                if stray:
                    check_renamed(f"{dotted}.{stray[0]}", f"a [[when]] table of {str(path)!r}")
                    raise ValueError(f"unknown key {dotted}.{stray[0]} in a [[when]] table of "
                                     f"{str(path)!r}")
    for dotted, spec in space.items():
        section, _, key = dotted.partition(".")
        if section not in schema.sections or key not in schema.sections[section]:
            check_renamed(dotted, f"the [search] table of {str(path)!r}")
            raise ValueError(f"search key {dotted!r} is not a config key; allowed: "
                             + ", ".join(f"{s}.{k}" for s in schema.sections
                                         for k in schema.sections[s]))
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
            trial = copy.deepcopy({s: base[s] for s in schema.sections})
            trial[section][key] = schema.sections[section][key].cast(value)
            schema.validate(trial)
    return base, settings, space


# ----------------------------------------------------------------------------- search space
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


def sample_configs(base: dict, space: dict, runs: int, seed: int, schema: Schema,
                   when: list[dict] = (), make: Callable[[dict, int], dict] | None = None
                   ) -> list[dict]:
    """``runs`` configs from ``space``: grid keys enumerated (run i takes grid point i mod N),
    the others drawn by ``random.Random(seed)``; the same list on any machine (draws are made
    in sorted key order, one run after the other). Then every ``[[when]]`` table whose
    conditions the run meets is merged in, in file order. Run ``i`` is validated and named by
    ``make(sections, i)`` (a slice's own run config and name), by default ``schema.validate``
    and ``<base name>-<i:04d>``."""
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
            config[section][key] = schema.sections[section][key].cast(value)
        sections = {s: config[s] for s in schema.sections}
        for table in when:
            if when_applies(table, sections):
                deep_merge(sections, {k: v for k, v in table.items() if "." not in k})
        if make is not None:
            configs.append(make(sections, index))
        else:
            configs.append(schema.validate(sections) | {"name": f"{base['name']}-{index:04d}"})
    return configs
