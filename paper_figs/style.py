"""The one style of every figure: the placement-to-colour map and the other colour tables, the
matplotlib style file ``resharpen.mplstyle`` (applied when ``resharpen.paper_figs`` is imported),
reference lines drawn above the data, and the quick-profile stamp.

Every colour a figure uses comes from here (tests/core/test_figs.py checks that no figure module
writes a colour of its own)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

from resharpen.experiments.model.schemes import SCHEMES, by_dynamics_name
from resharpen.theory.dynamics.schemes import SCHEMES as DYNAMICS_SCHEMES

STYLE_FILE = Path(__file__).with_name("resharpen.mplstyle")

PLACEMENT_COLORS: dict[str, str] = {name: scheme.color for name, scheme in SCHEMES.items()}
"""Norm placement -> colour, the same in every figure (the scheme registry's; colour-blind safe:
Okabe-Ito and Tol)."""

PLACEMENT_MARKERS: dict[str, str] = {name: scheme.marker for name, scheme in SCHEMES.items()}
"""Norm placement -> marker, so placements differ in greyscale too (not only in colour)."""

SCHEME_COLORS: dict[str, str] = {scheme: by_dynamics_name(scheme).color
                                 for scheme in DYNAMICS_SCHEMES}
"""The normalization schemes of arXiv 2510.22026, each in the colour of its trained placement
(the registry maps the two vocabularies)."""

WEIGHT_COLORS: dict[str, str] = {"raw": "#6E6E6E", "ema": "#56B4E9", "bema": "#8C564B"}
"""Weight set (raw, EMA, BEMA) -> colour, for figures whose lines are weight sets."""

WEIGHT_STYLES: dict[str, str] = {"raw": "-", "ema": "--", "bema": ":"}
"""Weight set -> line style, for figures whose colours are placements."""

WEIGHT_MARKERS: dict[str, str] = {"raw": "o", "ema": "s", "bema": "^"}
"""Weight set -> marker, so that scatter points read without colour."""

REFERENCE = "black"
"""Reference lines and laws (1/s, 2/s, L_train, bounds): black, drawn above the data."""

MUTED = "#9E9E9E"
"""Secondary data (a batch's own L_freq, zero lines)."""

ON_DARK = "white"
"""Text on the dark end of a colour map (the reference colour on the light end)."""

QUICK_STAMP = "QUICK PROFILE: reduced sizes, not the paper's numbers"
STAMP_COLOR = "#C00000"
REFERENCE_ZORDER = 5


def placement_color(norm: str) -> str:
    """The colour of a norm placement, read from the scheme registry when the figure is drawn (so
    a scheme registered after this module was imported, a plug-in, has its colour); KeyError
    naming the known ones."""
    try:
        return SCHEMES[norm].color
    except KeyError:
        raise KeyError(f"no colour for placement {norm!r}; known: {sorted(SCHEMES)}")


def sequence_colors(count: int) -> list:
    """``count`` ordered colours (a dose: multipliers, learning rates, vocabulary sizes)."""
    import numpy as np

    return list(matplotlib.colormaps["viridis"](np.linspace(0.0, 0.85, max(count, 1))))


def reference(ax, x, y, **kwargs):
    """Draw a reference curve (a law, a bound) in black above the data."""
    kwargs.setdefault("color", REFERENCE)
    kwargs.setdefault("lw", 1.0)
    return ax.plot(x, y, zorder=REFERENCE_ZORDER, **kwargs)


def vline(ax, x, **kwargs):
    """A vertical marker (L_train, a collapse step) above the data."""
    kwargs.setdefault("color", REFERENCE)
    kwargs.setdefault("lw", 0.8)
    kwargs.setdefault("ls", "--")
    return ax.axvline(x, zorder=REFERENCE_ZORDER, **kwargs)


def hline(ax, y, **kwargs):
    """A horizontal reference (zero, a threshold) above the data."""
    kwargs.setdefault("color", REFERENCE)
    kwargs.setdefault("lw", 0.6)
    return ax.axhline(y, zorder=REFERENCE_ZORDER, **kwargs)


COLUMN_WIDTH = 3.5
"""Inches: one column of a two-column paper. A single-panel figure is drawn this wide, so its
type (8 pt and up) is read at its own size when the figure is set at column width."""

TEXT_WIDTH = 7.0
"""Inches: the full text width, for multi-panel figures (type again 8 pt and up)."""

MIN_FONT = 8
"""Points: the smallest type of a figure drawn at :data:`COLUMN_WIDTH` or :data:`TEXT_WIDTH`."""


def finish_panels(fig, axes, legend_columns: dict) -> None:
    """The last touches of a row of panels: every tick label at :data:`MIN_FONT`, a tight
    layout, and a legend below each panel of ``legend_columns`` ({panel index: columns})."""
    for ax in axes:
        ax.tick_params(labelsize=MIN_FONT)
    fig.tight_layout()
    for index, ncol in legend_columns.items():
        legend_below(axes[index], ncol=ncol)


def legend_below(ax_or_fig, handles=None, ncol: int = 1, **kwargs):
    """A legend under the axes (or the whole figure), outside the data: it hides nothing.
    ``bbox_inches="tight"`` grows the saved image to include it."""
    kwargs.setdefault("fontsize", MIN_FONT)
    kwargs.setdefault("frameon", False)
    if handles is not None:
        kwargs["handles"] = handles
    if hasattr(ax_or_fig, "transAxes"):  # an Axes: below its tick labels and x label
        lines = 1 + ax_or_fig.get_xlabel().count("\n")
        kwargs.setdefault("borderaxespad", 2.2 + 1.3 * lines)  # in font sizes, not axes heights
        return ax_or_fig.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol,
                                **kwargs)
    return ax_or_fig.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=ncol, **kwargs)


def key(label: str, **kwargs):
    """A legend entry drawn nowhere (a proxy line): for what every panel shares, or a marker
    that explains a set of lines."""
    from matplotlib.lines import Line2D

    kwargs.setdefault("color", REFERENCE)
    return Line2D([], [], label=label, **kwargs)


def stamp(fig, profile: str | None) -> None:
    """Mark a figure drawn from quick-profile data (no mark for the full profile or None), under
    everything the figure draws (its tight bounding box), so it covers no label or legend."""
    if profile == "quick":
        renderer = fig.canvas.get_renderer()
        box = fig.get_tightbbox(renderer)  # inches, the figure's origin at the bottom left
        width, height = fig.get_size_inches()
        fig.text(box.x1 / width, (box.y0 - 0.04) / height, QUICK_STAMP, ha="right", va="top",
                 fontsize=MIN_FONT, color=STAMP_COLOR)


def apply() -> None:
    """Make ``resharpen.mplstyle`` matplotlib's current style."""
    import matplotlib.style

    matplotlib.style.use(STYLE_FILE)
