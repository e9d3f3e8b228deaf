"""The package's one JSON encoding: strict JSON (no NaN or Infinity tokens), with every
non-finite float written as null beside a reason field and read back as the float
(:func:`dumps_json`, :func:`loads_json`)."""
from __future__ import annotations

import json
from typing import Iterable

NONFINITE_SUFFIX = "_nonfinite"


_NONFINITE = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def strict_json_value(obj: object) -> object:
    """``obj`` with every non-finite float (NaN, inf, -inf) replaced by None and the reason kept
    beside it: in a dict, key ``k`` gets a sibling ``k_nonfinite``, ``"nan"``, ``"inf"`` or
    ``"-inf"``, or for a list value {index: reason} (nested lists nest), e.g.
    ``{"b": [1.0, inf]}`` -> ``{"b": [1.0, null], "b_nonfinite": {"1": "inf"}}``. Strict JSON has
    no NaN or Infinity tokens, and a reader must still tell a missing value from an overflow;
    :func:`loads_json` restores the floats."""
    value, _ = _strict(obj)
    return value


def _strict(obj: object) -> tuple[object, object]:
    if isinstance(obj, float):
        if obj != obj:
            return None, "nan"
        return (obj, None) if abs(obj) != float("inf") else (None, "inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        out = {}
        for key, item in obj.items():
            out[key], reason = _strict(item)
            if reason is not None:
                out[f"{key}{NONFINITE_SUFFIX}"] = reason
        return out, None
    if isinstance(obj, (list, tuple)):
        items, reasons = [], {}
        for index, item in enumerate(obj):
            clean, reason = _strict(item)
            items.append(clean)
            if reason is not None:
                reasons[str(index)] = reason
        return items, (reasons or None)
    return obj, None


def restore_nonfinite(obj: object) -> object:
    """Inverse of :func:`strict_json_value`: null values with a ``k_nonfinite`` reason become
    the float NaN, inf or -inf again (and the reason keys go)."""
    if isinstance(obj, dict):
        out = {}
        for key, item in obj.items():
            if key.endswith(NONFINITE_SUFFIX) and key[:-len(NONFINITE_SUFFIX)] in obj:
                continue
            reason = obj.get(f"{key}{NONFINITE_SUFFIX}")
            out[key] = _put_back(restore_nonfinite(item), reason)
        return out
    if isinstance(obj, list):
        return [restore_nonfinite(item) for item in obj]
    return obj


def _put_back(value: object, reason: object) -> object:
    if reason is None:
        return value
    if value is None and isinstance(reason, str):
        return _NONFINITE.get(reason, value)
    if isinstance(value, list) and isinstance(reason, dict):
        return [_put_back(item, reason.get(str(i))) for i, item in enumerate(value)]
    return value


def loads_json(text: str) -> object:
    """The one JSON reader of run files: ``json.loads`` and :func:`restore_nonfinite` (files
    written before strict JSON, with NaN tokens, still read)."""
    return restore_nonfinite(json.loads(text))


def dumps_json(obj: object, indent: int | None = 2, sort_keys: bool = False) -> str:
    """The one JSON writer of the package: strict JSON (``allow_nan=False``) of
    :func:`strict_json_value` (obj), so NaN and inf are written as null with a reason field."""
    return json.dumps(strict_json_value(obj), indent=indent, sort_keys=sort_keys, allow_nan=False)


def dumps_jsonl(rows: Iterable[object]) -> str:
    """JSON Lines: one :func:`dumps_json` object per line."""
    return "".join(dumps_json(row, indent=None) + "\n" for row in rows)
