"""Memory estimates of the commands, checked before anything is allocated.

Each ``*_bytes`` function estimates, from the sizes a user gives, the peak memory in bytes of one
command; :func:`require` compares an estimate with the limit (``--max-memory`` when given, else
the memory the machine has available) and raises one ``ValueError`` naming the estimate when it
does not fit. Handlers call it inside ``bad_input()``, so the command line prints it as one line
``error: ...`` (exit 2) before any work; library functions that allocate by a user-given size
(``constructions.set_complement.build``) call it themselves.

The estimates count the arrays that dominate (float64 = 8 bytes, float32 = 4, int64 = 8, bool =
1) with the number of simultaneously live copies measured on the code (peak RSS at a few sizes;
``tests/core/test_limits.py`` checks the construct estimate against a measured peak). They are
meant to be within a small factor, on the safe side for the large sizes that matter.

This module is imported when the command line is parsed: it imports nothing heavy.
"""
from __future__ import annotations

import math
import re

GIB = 1024 ** 3
F64, F32, I64 = 8, 4, 8

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024 ** 2, "mb": 1024 ** 2,
          "mib": 1024 ** 2, "g": GIB, "gb": GIB, "gib": GIB, "t": 1024 ** 4, "tb": 1024 ** 4,
          "tib": 1024 ** 4}


def parse_size(text: str | int | float) -> int:
    """``"8G"``, ``"512MB"``, ``"1.5GiB"``, ``"2e9"`` -> bytes (binary units: 1G = 2^30 bytes).

    ValueError for anything else or a size that is not > 0."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), ""
    else:
        match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([A-Za-z]*)\s*", str(text))
        if not match or match.group(2).lower() not in _UNITS:
            raise ValueError(f"a memory size is a number with an optional unit K, M, G or T "
                             f"(e.g. 8G), got {text!r}")
        try:
            value = float(match.group(1))
        except ValueError:
            raise ValueError(f"a memory size is a number with an optional unit K, M, G or T "
                             f"(e.g. 8G), got {text!r}") from None
        unit = match.group(2).lower()
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"a memory size must be a finite number > 0, got {text!r}")
    return int(value * _UNITS[unit])


def max_memory_arg(text: str) -> int:
    """argparse type of ``--max-memory``: a size (see :func:`parse_size`)."""
    import argparse

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_max_memory(parser) -> None:
    """Declare ``--max-memory SIZE`` on a subcommand's parser."""
    parser.add_argument("--max-memory", type=max_memory_arg, default=None, metavar="SIZE",
                        help="refuse, before allocating, work whose memory estimate exceeds SIZE "
                             "(e.g. 8G; default: the memory the machine has available)")


def available_memory() -> int | None:
    """Bytes the machine can give without swapping: psutil's ``virtual_memory().available``
    when psutil is installed, else MemAvailable of /proc/meminfo; None when neither is known."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        return int(psutil.virtual_memory().available)
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def format_bytes(size: float) -> str:
    """Bytes in binary units, three significant digits: ``80.0 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(size) < 1024 or unit == "PiB":
            return f"{size:.3g} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    return f"{size:.3g} PiB"  # pragma: no cover


def require(estimate: float, what: str, max_memory: int | None = None) -> float:
    """ValueError unless ``estimate`` bytes fit the limit: ``max_memory`` when given (the user's
    ``--max-memory``, which may also raise the limit above what is free), else the available
    memory (:func:`available_memory`; no check when it is unknown). ``what`` names the work and
    its sizes, e.g. ``"construct --vocab 100000"``. Returns the estimate."""
    if max_memory is not None:
        limit, source = int(max_memory), "the --max-memory limit"
    else:
        limit, source = available_memory(), "the available memory"
    if limit is not None and estimate > limit:
        raise ValueError(f"{what} needs about {format_bytes(estimate)} of memory (estimate), more "
                         f"than {source} of {format_bytes(limit)}; use smaller sizes"
                         + ("" if max_memory is not None else " or set --max-memory"))
    return estimate


SMALL = 256 * 1024 ** 2
"""Estimates below this many bytes are not checked (:func:`require_large`): no call to read the
machine's memory on the hot paths of small evaluations."""


def require_large(estimate: float, what: str, max_memory: int | None = None) -> float:
    """:func:`require` for an estimate of at least :data:`SMALL` bytes; smaller ones pass."""
    return require(estimate, what, max_memory) if estimate >= SMALL else estimate


CONSTRUCT_SCALES = (1e-50, 1e50)
"""The range of |lambda|, |beta| and the gain of ``construct`` (0 is left to the construction's
own checks). The logits multiply these scales and the norms square them: measured on every
variant, placement and norm kind at v = 12, every combination with each scale in this range
(ratios lambda/beta up to 1e100 included) builds with max |margin - theory| / max(1, |theory|)
< 1e-6; beyond it float64 fails (lambda = 1e154 with a norm: squares overflow; lambda/beta =
1e150: NaN margins), and lambda = 1e300 gave meaningless metrics."""


def check_construct_scales(**scales: float | None) -> None:
    """ValueError naming the first of ``scales`` (lam, beta, gain; None = its default, 0 = the
    construction's own error) whose absolute value is outside :data:`CONSTRUCT_SCALES`."""
    lo, hi = CONSTRUCT_SCALES
    for name, value in scales.items():
        if value is not None and value != 0 and not lo <= abs(value) <= hi:
            raise ValueError(f"--{name} {value:g} is out of range: |{name}| must lie in "
                             f"[{lo:g}, {hi:g}] (the logits multiply lam, beta and gain, and the "
                             "norms square them: beyond this float64 fails)")


SELF_SCORE_MAX = 700.0
"""The largest |self_score| a of the unbalanced construction: its margins hold e^a, which
overflows float64 beyond a = 709.78."""


# ----------------------------------------------------------------------------- estimates
INTERPRETER = 512 * 1024 ** 2
"""Python with torch, numpy and scipy loaded (about 0.3-0.5 GB resident)."""

def construction_widths(variant: str, vocab: int) -> tuple[int, int, int]:
    """(d_model, d_head, d_value) of a Set Complement construction (constructions/set_complement):
    tight (v-1, 1, v-1), unbalanced (v-1, v-1, v-1), one_hot (v, 1, v), balanced (v, 1, v-1)."""
    v = int(vocab)
    return {"tight": (v - 1, 1, v - 1), "one_hot": (v, 1, v), "balanced": (v, 1, v - 1)}.get(
        variant, (v - 1, v - 1, v - 1))


def construct_weights_bytes(variant: str, vocab: int) -> int:
    """The float64 weights of a construction: 8 (v d [W_E] + d v [W_U] + 2 d d_h [W_Q, W_K]
    + 2 d d_v [W_V, W_O])."""
    d, dh, dv = construction_widths(variant, vocab)
    return F64 * (2 * vocab * d + 2 * d * dh + 2 * d * dv)


def forward_flops(vocab: int, d: int, d_head: int, d_value: int, length: int) -> float:
    """Multiply-adds x 2 of one forward pass of a one-layer, one-head model on one sequence of
    ``length`` tokens: 2 S (2 d d_h + 2 d d_v + d v) [projections, W_O, unembedding]
    + 2 S^2 (d_h + d_v) [scores and the weighted sum]."""
    s = float(length)
    return 2 * s * (2 * d * d_head + 2 * d * d_value + d * vocab) + 2 * s * s * (d_head + d_value)


def evaluation_bytes_per_input(vocab: int, d: int, d_head: int, d_value: int, length: int) -> int:
    """Float64 memory of one input (a sequence of ``length`` tokens) in the per-length evaluation
    (``set_complement.evaluate``): at its peak the forward pass and the metrics keep about
    4 (S x d)-sized arrays (residual, q, k, v, mixed, output), 2 (S x S) (scores, weights) and
    6 (S x v) (logits and the metrics' temporaries) alive: 8 S (4 max(d, d_h, d_v) + 2 S + 6 v).
    (Measured on the tight construction: at v = 3000 one input peaks 0.46 GB above the built
    model, 6.4 (S x v) arrays; at v = 10^4 the whole command peaks at 14.4 GB, about 11.6 arrays
    above the weights and the interpreter; the formula counts 12.)"""
    width = max(d, d_head, d_value)
    return F64 * length * (4 * width + 2 * length + 6 * vocab)


def construct_bytes(variant: str, vocab: int, inputs: int = 16) -> int:
    """Peak memory of ``construct``: the interpreter, the weights, plus the larger of the build's
    temporaries (about 4 v x d float64 arrays: the complement basis, its scaled transpose, the
    comparison grid) and one chunk of the evaluation of ``inputs`` inputs at length v-1
    (:func:`evaluation_chunk_inputs` x :func:`evaluation_bytes_per_input`)."""
    d, dh, dv = construction_widths(variant, vocab)
    build = F64 * 4 * vocab * d
    per_input = evaluation_bytes_per_input(vocab, d, dh, dv, vocab - 1)
    evaluation = evaluation_chunk_inputs(per_input, inputs) * per_input
    return INTERPRETER + construct_weights_bytes(variant, vocab) + max(build, evaluation)


def sample_inputs_bytes(count: int, vocab: int, length: int) -> int:
    """Set Complement inputs (``set_complement_task.sample_inputs``): a float64 key and an int64
    index per token of V for each input (the random orderings), then the kept int64 prefixes:
    count (16 v + 8 length)."""
    return int(count) * (2 * F64 * int(vocab) + I64 * int(length))


def compare_bytes(count: int, vocab: int, d: int, d_head: int, d_value: int) -> int:
    """``compare``: ``count`` inputs of v-1 tokens at once in float64 (the evaluation's per-input
    memory, :func:`evaluation_bytes_per_input`, plus the attention pattern 8 S^2), for the model
    and three logit sources (trained, fit, construction: 3 (S x v) more per input), plus the
    inputs (:func:`sample_inputs_bytes`)."""
    length = int(vocab) - 1
    per_input = (evaluation_bytes_per_input(vocab, d, d_head, d_value, length)
                 + F64 * length * length + 3 * F64 * length * vocab)
    return int(count) * per_input + sample_inputs_bytes(count, vocab, length)


def sample_bytes(count: int, length: int, size: int, sets: bool = False) -> int:
    """``tasks sample`` / ``tasks games``: int64 sequences (count x length), the sampler's states
    (about one int64 per position) and per-draw legal masks and uniform draws (count x size,
    bool + float64), plus with ``--sets`` the legal-next masks (count x length x size bool):
    count (16 length + 9 size) [+ count length size]."""
    base = count * (2 * I64 * length + 9 * size)
    return base + (count * length * size if sets else 0)


def simulate_bytes(n: int, d: int, samples: int, random_qkv: bool = False) -> int:
    """``dynamics simulate``: per right-hand-side evaluation about 4 (n x n) float64 arrays
    (scores, weights and their products), the solver's 10 stage copies of the state n (d+1), the
    trajectory (samples x n x (d+1)) and its Gram matrices (samples x n x n), plus 3 d x d
    weights with random Q, K, V: 8 (4 n^2 + 10 n (d+1) + samples n (d+1+n) [+ 3 d^2])."""
    return F64 * (4 * n * n + 10 * n * (d + 1) + samples * n * (d + 1 + n)
                  + (3 * d * d if random_qkv else 0))


def stacks_bytes(n: int, d: int, schemes: int = 6) -> int:
    """``dynamics stacks``: two layers' random Q, K, V (the next drawn while the last is held)
    and one matrix in the making, 7 d x d float64, each scheme's tokens (n x d) and the n x n
    scores: 8 (7 d^2 + schemes n d + 4 n^2). (Measured at n = 32, d = 3000: 422 MiB above the
    interpreter; the formula gives 484 MiB.)"""
    return F64 * (7 * d * d + schemes * n * d + 4 * n * n)


def collapse_stack_bytes(n: int, d: int, depth: int, ffn_width: int = 0) -> int:
    """``collapse stack``: one sample's float64 stack at a time, ``depth`` layers of random
    weights (4 d x d attention, 3 d x ffn_width SwiGLU), twice (the float32 storage it is cast
    from and the draws), and one layer's states (about 8 n x d and 4 n x n arrays):
    8 (2 depth (4 d^2 + 3 d f) + 8 n d + 4 n^2). (Measured at n = 256, d = 512, depth 8:
    147 MiB above the interpreter; the formula gives 138 MiB.)"""
    return F64 * (2 * depth * (4 * d * d + 3 * d * ffn_width) + 8 * n * d + 4 * n * n)


def transformer_params(vocab: int, d_model: int, n_layers: int, n_heads: int, d_head: int,
                       d_mlp: int = 0, swiglu: bool = False, max_len: int = 0) -> int:
    """Parameters of the core Transformer: 2 v d (embedding, unembedding) + max_len d
    + layers (4 h d d_h + (2 or 3) d d_mlp + 4 d [norms])."""
    mlp = (3 if swiglu else 2) * d_model * d_mlp
    return (2 * vocab * d_model + max_len * d_model
            + n_layers * (4 * n_heads * d_model * d_head + mlp + 4 * d_model))


def training_bytes(params: int, batch: int, seq: int, vocab: int, d_model: int, n_layers: int,
                   n_heads: int, d_mlp: int = 0, eval_chunk_bytes: int = 0) -> int:
    """One training run: float32 parameters with their gradient, AdamW's two moments and the
    weight averagers (raw, EMA, BEMA: about 4 more copies) = 4 x 8 params; activations kept for
    the backward pass, float32, about 3 x batch x seq x (layers (10 d + 2 h seq + 4 d_mlp) + 3 v);
    a float64 copy of the weights for the exact evaluation (8 params) and its chunk."""
    activations = 3 * F32 * batch * seq * (n_layers * (10 * d_model + 2 * n_heads * seq
                                                       + 4 * d_mlp) + 3 * vocab)
    return 4 * 8 * params + activations + F64 * params + eval_chunk_bytes


def set_complement_training_bytes(config: dict) -> int:
    """:func:`training_bytes` of a Set Complement config (``set_complement.train.load_config``):
    sequences of v-1 tokens at evaluation, ``train_len`` in training, the evaluation in chunks of
    :func:`evaluation_chunk_inputs` inputs."""
    task, model, train = config["task"], config["model"], config["train"]
    v, d, layers, heads = task["vocab"], model["d_model"], model["n_layers"], model["n_heads"]
    d_head = model.get("d_head") or max(1, d // heads)
    d_mlp = model.get("d_mlp") or (4 * d if model.get("mlp", "none") != "none" else 0)
    if model.get("mlp", "none") == "none":
        d_mlp = 0
    max_len = v if model.get("positional", "none") == "learned" else 0  # rope: no slots
    params = transformer_params(v, d, layers, heads, d_head, d_mlp,
                                model.get("mlp") == "swiglu", max_len)
    seq = max(1, task.get("train_len") or v // 4)
    per_input = evaluation_bytes_per_input(v, d, heads * d_head, heads * d_head, v - 1)
    chunk = evaluation_chunk_inputs(per_input, config.get("eval", {}).get("per_length", 64))
    return training_bytes(params, train["batch_size"], seq, v, d, layers, heads, d_mlp,
                          chunk * per_input)


# ----------------------------------------------------------------------------- evaluation chunks
EVAL_CHUNK_BYTES = 2 * GIB
"""Memory one chunk of the per-length evaluation may take; a larger batch runs in chunks."""


def evaluation_chunk_inputs(per_input_bytes: int, inputs: int,
                            budget: int = EVAL_CHUNK_BYTES) -> int:
    """How many inputs one forward pass of the evaluation takes: all of them when they fit
    ``budget`` (the usual case, one pass), else floor(budget / per-input bytes), at least 1."""
    if inputs * per_input_bytes <= budget:
        return inputs
    return max(1, min(inputs, budget // max(1, per_input_bytes)))
