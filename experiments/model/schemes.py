"""The normalization schemes: one registry, one entry per scheme. Plain data, no torch import.

Each sublayer f (attention, then the optional MLP) of layer l (0-based, of L layers) is wrapped
by the residual rule the scheme gives that layer (:class:`Layer`); N = RMSNorm or LayerNorm:

    none         x + f(x)
    pre          x + f(N(x))                     and a final N before W_U
    pre_nofinal  x + f(N(x))                     (no final N: nothing resharpens the readout)
    post         N(x + f(x))
    attn_out     x + N(f(x))
    peri         x + N(f(N(x)))                  and a final N
    mixln        N(x + f(x)) for l < max(1, floor(L/4)), x + f(N(x)) after; and a final N
    ln_scaling   x + f(N(x) / sqrt(l + 1))       and a final N (not scaled)
    ngpt         u(x + alpha (u(f(x)) - x)),     u(v) = v / |v|; no N

An entry (:class:`Scheme`) holds the rule of each layer, whether a final N precedes the readout,
nGPT's sphere flag and step after the optimizer, the scheme's name in the dynamics paper
(arXiv 2510.22026, :mod:`resharpen.theory.dynamics.schemes`), and its label, colour and marker in
every figure. Every list of schemes in the package is a filter over :data:`SCHEMES`
(:func:`names`). A researcher's own scheme is one :func:`register` call, in their own file
(``resharpen battery --scheme my_norms.py:NAME``) or an installed package's entry point in the
group ``resharpen.schemes`` (:func:`load_plugin`).

The rules use the tensors' own methods only, so this module imports no torch: a command checks a
config's ``model.norm`` against the registry before it imports torch.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

Rule = Callable[[Any, Callable, Any], Any]
"""``rule(x, f, p)``: the new residual from the residual x, the sublayer f and its parts p (the
model's ``Parts``: input norm ``p.n_in``, output norm ``p.n_out``, nGPT's ``p.alpha``)."""


@dataclass(frozen=True)
class Layer:
    """What a scheme puts in one layer, the same for attention and the MLP.

    ``rule(x, f, p)`` is the new residual; a block applies it twice, to attention and to the MLP
    (nanoGPT's two lines). ``input_norm``: an N before f (``p.n_in``). ``output_norm``: None,
    ``"branch"`` (N on f's output, x + N(f)) or ``"residual"`` (N on the sum, N(x + f))
    (``p.n_out``). ``eigen_rate``: a learnable alpha per sublayer (``p.alpha``, nGPT)."""

    rule: Rule
    input_norm: bool = False
    output_norm: str | None = None
    eigen_rate: bool = False

    def __post_init__(self):
        if self.output_norm not in (None, "branch", "residual"):
            raise ValueError(f"output_norm must be None, 'branch' or 'residual', got "
                             f"{self.output_norm!r}")


def unit(v, dim: int = -1):
    """v / max(|v|, 1e-12) along ``dim`` (nGPT's Norm; ``torch.nn.functional.normalize``'s
    formula, written with the tensor's own methods)."""
    return v / v.norm(dim=dim, keepdim=True).clamp_min(1e-12)


# The residual updates, made visible: x is the residual, f the sublayer, p its parts.
NONE = Layer(lambda x, f, p: x + f(x))
PRE = Layer(lambda x, f, p: x + f(p.n_in(x)), input_norm=True)
POST = Layer(lambda x, f, p: p.n_out(x + f(x)), output_norm="residual")
ATTN_OUT = Layer(lambda x, f, p: x + p.n_out(f(x)), output_norm="branch")
PERI = Layer(lambda x, f, p: x + p.n_out(f(p.n_in(x))), input_norm=True, output_norm="branch")
NGPT = Layer(lambda x, f, p: unit(x + p.alpha * (unit(f(x)) - x)), eigen_rate=True)


def ln_scaling(layer: int) -> Layer:
    """LayerNorm Scaling (Sun et al. 2025): Pre-LN whose input norms in layer ``layer``
    (0-based) are scaled by 1/sqrt(layer + 1)."""
    factor = 1.0 / math.sqrt(layer + 1)
    return Layer(lambda x, f, p: x + f(p.n_in(x) * factor), input_norm=True)


MIXLN_ALPHA = 0.25  # Mix-LN: the fraction of the layers, from the first, that are Post-LN


def mixln_post_layers(n_layers: int) -> int:
    """How many of the first layers of an ``n_layers``-layer mixln model are Post-LN:
    floor(alpha L) with alpha = 0.25 (Li et al. 2024, Mix-LN), and at least 1."""
    return max(1, math.floor(MIXLN_ALPHA * n_layers))


NORM_KINDS = ("rms", "layer")
"""N: RMSNorm or LayerNorm (``model.norm_kind``)."""
NORM_GAINS = ("learned", "frozen")
"""N's gain (and LayerNorm's bias): learned, or frozen at 1 (and 0), no parameters."""

SPHERE_AXES = {"W_E": -1, "W_pos": -1, "W_U": -2, "W_Q": -2, "W_K": -2, "W_V": -2, "W_O": -1,
               "W_in": -2, "W_gate": -2, "W_out": -1}
"""nGPT's unit vectors: for each matrix, its axis of width d_model."""


def renormalize_(params: Mapping[str, Any]) -> None:
    """nGPT's step after the optimizer: every weight vector along the residual width d (the
    axis :data:`SPHERE_AXES` names for each matrix, by the last part of its name) scaled to unit
    length, in place, outside autograd (on the detached tensors, which share the storage). The
    axes are negative, so a stack of K models (a leading member axis) is re-normalized member by
    member unchanged."""
    for name, tensor in params.items():
        axis = SPHERE_AXES.get(name.rsplit(".", 1)[-1])
        if axis is not None:
            values = tensor.detach()
            values.copy_(unit(values, axis))


@dataclass(frozen=True)
class Scheme:
    """One normalization scheme.

    ``layer(l, L)``: the :class:`Layer` of layer l (0-based) of an L-layer model.
    ``final_norm``: an N_final before W_U. ``sphere``: nGPT's hidden states, weights and scalings
    (q, k on the sphere with s_qk, the MLP's s_u, s_nu, the logit scale s_z). ``after_step``: what
    runs on the parameters (name -> tensor) after every optimizer step, or None.
    ``dynamics_name``: the scheme's name in arXiv 2510.22026 (None where the paper has none).
    ``construction``: the readout of the Set Complement hand construction that reads out like it
    (a name of :data:`resharpen.theory.set_complement.readouts.READOUTS`; None: no construction).
    ``lemma_readout``: its one-layer, one-head, attention-only model reads out logits of the
    lemma's form f = c (B*[t_s] + a sum_i w_i D*[t_i]) + e (the norms folded into the logit maps,
    :mod:`resharpen.experiments.set_complement.compare`), so the trained weights can be fitted to
    the lemma; its layer-0 :class:`Layer` says where the norms sit, and at most one norm acts on
    the residual before W_U. ``trained_dynamics``: the trained-dynamics study
    (:mod:`resharpen.experiments.dynamics.trained`, the ``dyn.trained.*`` claims) trains and
    measures it. ``label``, ``color``, ``marker``: how every figure draws it. ``builtin``: defined
    here (False for a plug-in)."""

    name: str
    layer: Callable[[int, int], Layer]
    final_norm: bool
    label: str
    color: str
    marker: str
    sphere: bool = False
    after_step: Callable[[Mapping[str, Any]], None] | None = None
    dynamics_name: str | None = None
    construction: str | None = None
    lemma_readout: bool = False
    trained_dynamics: bool = False
    builtin: bool = field(default=False, compare=False)


SCHEMES: dict[str, Scheme] = {}
"""name -> :class:`Scheme`: every scheme the model knows, the built-in ones first."""


def register(scheme: Scheme, *, replace: bool = False) -> Scheme:
    """Add ``scheme`` to :data:`SCHEMES` (ValueError for a bad entry or a taken name, unless
    ``replace``); returns it, so a plug-in file can write ``MY = register(Scheme(...))``."""
    from resharpen.experiments.common.names import check_name
    from resharpen.theory.set_complement.readouts import READOUTS

    if not isinstance(scheme, Scheme):
        raise TypeError(f"scheme must be a resharpen Scheme, got {type(scheme).__name__}")
    check_name(scheme.name, "scheme name")
    if scheme.name in SCHEMES and not replace:
        raise ValueError(f"a scheme named {scheme.name!r} is already registered")
    if scheme.construction is not None and scheme.construction not in READOUTS:
        raise ValueError(f"scheme {scheme.name!r}: construction must be None or one of "
                         f"{', '.join(READOUTS)}, got {scheme.construction!r}")
    if scheme.lemma_readout:
        _check_lemma_readout(scheme)
    if not callable(scheme.layer):
        raise ValueError(f"scheme {scheme.name!r}: layer must be a function (l, L) -> Layer")
    for l, L in ((0, 1), (0, 2), (1, 2)):
        if not isinstance(scheme.layer(l, L), Layer):
            raise ValueError(f"scheme {scheme.name!r}: layer({l}, {L}) must return a Layer")
    SCHEMES[scheme.name] = scheme
    return scheme


def _check_lemma_readout(scheme: Scheme) -> None:
    """ValueError unless ``scheme``'s one-layer model can read out the lemma's form: no
    eigen-rate (nGPT), and at most one norm on the residual before W_U (a residual norm or a
    final norm, not both)."""
    layer = scheme.layer(0, 1)
    if layer.eigen_rate or scheme.sphere or (layer.output_norm == "residual"
                                             and scheme.final_norm):
        raise ValueError(f"scheme {scheme.name!r}: lemma_readout needs a one-layer model with "
                         "no eigen-rate, not on the sphere, and at most one norm on the residual "
                         "before W_U")


for _scheme in (
    Scheme("none", lambda l, L: NONE, final_norm=False, label="none", color="#0072B2",
           marker="o", construction="none", lemma_readout=True, trained_dynamics=True),
    Scheme("pre", lambda l, L: PRE, final_norm=True, label="Pre-LN", color="#009E73",
           marker="s", dynamics_name="preln", construction="pre", lemma_readout=True,
           trained_dynamics=True),
    Scheme("post", lambda l, L: POST, final_norm=False, label="Post-LN", color="#D55E00",
           marker="^", dynamics_name="postln", construction="post", lemma_readout=True,
           trained_dynamics=True),
    Scheme("attn_out", lambda l, L: ATTN_OUT, final_norm=False, label="attn-out LN",
           color="#882E72", marker="D", construction="attn_out", lemma_readout=True),
    Scheme("peri", lambda l, L: PERI, final_norm=True, label="Peri-LN", color="#E69F00",
           marker="v", dynamics_name="periln", lemma_readout=True, trained_dynamics=True),
    Scheme("pre_nofinal", lambda l, L: PRE, final_norm=False, label="Pre-LN, no final N",
           color="#44AA99", marker="P", lemma_readout=True),
    Scheme("mixln", lambda l, L: POST if l < mixln_post_layers(L) else PRE, final_norm=True,
           label="Mix-LN", color="#56B4E9", marker="X", dynamics_name="mixln",
           trained_dynamics=True),
    Scheme("ln_scaling", lambda l, L: ln_scaling(l), final_norm=True, label="LN scaling",
           color="#8C564B", marker="*", dynamics_name="sqrt", trained_dynamics=True),
    Scheme("ngpt", lambda l, L: NGPT, final_norm=False, label="nGPT", color="#6E6E6E",
           marker="h", sphere=True, after_step=renormalize_, dynamics_name="ngpt",
           trained_dynamics=True),
):
    register(Scheme(**{**_scheme.__dict__, "builtin": True}))
del _scheme

FIRST = ("none", "pre", "post", "attn_out", "peri")
"""The placements of the grids, benchmarks and figures made before the other schemes were added
(they keep training and drawing exactly these)."""


def names(*, builtin: bool | None = None, final_norm: bool | None = None,
          dynamics: bool | None = None, construction: bool | None = None,
          lemma_readout: bool | None = None, trained_dynamics: bool | None = None,
          output_norm: bool | None = None, among: tuple[str, ...] | None = None
          ) -> tuple[str, ...]:
    """The registered schemes' names in registry order, filtered: ``builtin`` (True: the
    package's own; False: plug-ins), ``final_norm``, ``dynamics`` (True: those the dynamics
    paper names), ``construction`` (True: those with a hand construction), ``lemma_readout``,
    ``trained_dynamics`` (the :class:`Scheme` fields), ``output_norm`` (True: a norm on a
    sublayer's output or on the sum in the first layer, post's, attn_out's and peri's N after
    f), ``among`` (only these names, e.g. :data:`FIRST`). None leaves a property free."""
    def has(value, wanted) -> bool:
        return wanted is None or bool(value) == wanted

    return tuple(s.name for s in SCHEMES.values()
                 if has(s.builtin, builtin) and has(s.final_norm, final_norm)
                 and has(s.dynamics_name is not None, dynamics)
                 and has(s.construction is not None, construction)
                 and has(s.lemma_readout, lemma_readout)
                 and has(s.trained_dynamics, trained_dynamics)
                 and has(s.layer(0, 1).output_norm is not None, output_norm)
                 and (among is None or s.name in among))


def get(name: str) -> Scheme:
    """The registered scheme ``name``; ValueError naming the known ones (and the closest)."""
    if name not in SCHEMES:
        import difflib

        close = difflib.get_close_matches(str(name), SCHEMES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown normalization scheme {name!r}{hint}; known: "
                         f"{', '.join(SCHEMES)}")
    return SCHEMES[name]


def by_dynamics_name(name: str) -> Scheme:
    """The scheme the dynamics paper calls ``name`` (``postln`` -> ``post``): the one mapping
    between the two vocabularies."""
    for scheme in SCHEMES.values():
        if scheme.dynamics_name == name:
            return scheme
    raise ValueError(f"no registered scheme has the dynamics name {name!r}")
