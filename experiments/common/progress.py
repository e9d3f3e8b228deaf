"""Progress of long work: a tqdm bar on a terminal, one plain line per evaluation otherwise.

On a terminal (stderr is a TTY) a command shows a tqdm bar that disappears when it is done.
Elsewhere (a log file, CI, a pipe) a bar would print nothing useful, so :class:`Progress`
writes one line to stderr at each evaluation instead:

    train fit_noise_v32-0003: step 200/2000 (10%), loss 2.3141, ID invalid mass 1.20e-02, ETA 0:00:41

The ETA is the elapsed time scaled by the remaining fraction of steps,
eta = elapsed (total - done) / (done - initial), from the moment the first step started
(``initial``: the items done before it, such as the runs a resumed sweep skips).
"""
from __future__ import annotations

import contextlib
import datetime
import math
import sys
import time
from typing import Any


def on_terminal() -> bool:
    """Whether stderr is a terminal (where a bar redraws in place)."""
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def bar(iterable=None, *, desc: str, unit: str, total: int | None = None,
        enabled: bool = True, initial: int = 0, leave: bool = False):
    """A tqdm bar on stderr, shown only when ``enabled`` and stderr is a terminal."""
    from tqdm import tqdm

    return tqdm(iterable, desc=desc, unit=unit, total=total, initial=initial, leave=leave,
                file=sys.stderr, disable=not (enabled and on_terminal()))


def fit_of(row: dict) -> float | None:
    """The in-distribution fit a history row reports: the stopping rule's measure, else the raw
    weights' in-distribution invalid (or illegal) mass, else None."""
    if "fit_id_invalid_mass" in row:
        return row["fit_id_invalid_mass"]
    for source in (row.get("raw") or {}, row):
        for key in ("id_invalid_mass", "id_invalid_mass"):
            if isinstance(source.get(key), (int, float)):
                return source[key]
    return None


class Progress:
    """One line per call of :meth:`line` on stderr when ``enabled`` and stderr is not a
    terminal (there the bar of :func:`bar` shows the same), at most one per ``min_interval``
    seconds: the first and the last (done = total) always, the others when that much time has
    passed since the previous line (a trainer that records every step writes a line every few
    seconds, not hundreds). A ``heartbeat`` is silent for short work: its first line comes
    ``min_interval`` seconds after the start, and its last only after an earlier one (a grid's
    run in a worker: a log hears from a long run every few minutes, from a short one never)."""

    def __init__(self, desc: str, total: int, unit: str = "step", enabled: bool = True,
                 min_interval: float = 5.0, heartbeat: bool = False, initial: int = 0):
        self.desc, self.total, self.unit, self.initial = desc, total, unit, initial
        self.enabled = enabled and not on_terminal()
        self.start = time.perf_counter()
        self.heartbeat = heartbeat
        self.min_interval, self.last = min_interval, (self.start if heartbeat else None)

    def eta(self, done: int) -> str:
        """The remaining time at the pace of this process: the elapsed time scaled by the
        remaining items over the items done since the start (``initial`` were done before it,
        e.g. the finished runs a resumed sweep skips)."""
        if done - self.initial <= 0:
            return "?"
        seconds = (time.perf_counter() - self.start) * (self.total - done) / (done - self.initial)
        return str(datetime.timedelta(seconds=round(seconds)))

    def line(self, done: int, **fields: Any) -> None:
        """``desc: step done/total (p%), field value, ..., ETA h:mm:ss`` (floats in 4
        significant digits; None fields left out)."""
        now = time.perf_counter()
        if not self.enabled or (self.last is not None and done < self.total
                                and now - self.last < self.min_interval):
            return
        if self.heartbeat and done >= self.total and self.last == self.start:
            return  # short work: no line at all
        self.last = now
        share = 100 * done / self.total if self.total > 0 else 100.0
        parts = [f"{self.unit} {_amount(done)}/{_amount(self.total)} ({share:.0f}%)"]
        for name, value in fields.items():
            if value is None:
                continue
            if isinstance(value, float):
                value = f"{value:.4f}" if math.isfinite(value) and abs(value) >= 0.01 \
                    else f"{value:.2e}"
            parts.append(f"{name} {value}")
        parts.append(f"ETA {self.eta(done)}")
        print(f"{self.desc}: " + ", ".join(parts), file=sys.stderr, flush=True)


def _amount(value: float) -> str:
    """A count as it is; an amount of a continuous unit (simulated time) in 4 digits."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)


class Meter:
    """Progress of one long computation measured in ``unit`` (layers, steps, simulated time):
    the bar of :func:`bar` on a terminal, else a line (:class:`Progress`, a heartbeat) every
    ``min_interval`` seconds, so that a log hears from long work and never from short work.
    :meth:`update` adds an amount done; use it as a context manager, or :func:`track` over an
    iterable."""

    def __init__(self, desc: str, total: float, unit: str, enabled: bool = True,
                 min_interval: float = 10.0):
        self.shown = bar(desc=desc, unit=unit, total=total, enabled=enabled)
        self.lines = Progress(desc, total, unit=unit, enabled=enabled,
                              min_interval=min_interval, heartbeat=True)
        self.done = 0 if isinstance(total, int) else 0.0

    def update(self, amount: float = 1) -> None:
        self.done += amount
        self.shown.update(amount)
        self.lines.line(self.done)

    def close(self) -> None:
        self.shown.close()

    def __enter__(self) -> "Meter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def track(iterable, *, desc: str, unit: str, total: int | None = None, enabled: bool = True):
    """The items of ``iterable``, each counted as one ``unit`` done on a :class:`Meter`
    (``total`` defaults to ``len(iterable)``)."""
    total = len(iterable) if total is None else total
    with Meter(desc, total, unit, enabled=enabled) as meter:
        for item in iterable:
            yield item
            meter.update()


@contextlib.contextmanager
def per_item(desc: str, total: int, unit: str, describe):
    """Progress over ``total`` items that finish in any order: yields the callback to call with
    each finished item; a bar on a terminal, else a line (:class:`Progress`) naming the item
    with ``describe(item) -> {label: text}``."""
    lines, finished = Progress(desc, total, unit=unit), []
    with bar(total=total, desc=desc, unit=unit, leave=True) as shown:
        def done(item) -> None:
            finished.append(item)
            shown.update()
            lines.line(len(finished), **describe(item))
        yield done


__all__ = ["on_terminal", "bar", "fit_of", "Progress", "Meter", "track", "per_item"]
