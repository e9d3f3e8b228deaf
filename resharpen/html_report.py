"""The self-contained HTML report: the claim ledger, the figures and the environment in one file.

``resharpen report --html out/report.html`` (and ``make reproduce``) writes it from a ledger
JSON (``resharpen verify --json out/ledger.json``) and a figures folder (``resharpen figs``,
``out/figs``). The page needs no server and no network: the figures are embedded as PNG data
URIs, the style and the filter script are inline, math is converted to Unicode here
(:func:`math_html`), and it loads nothing else. It holds

- one summary per paper (:data:`PAPERS`, in that order): the paper's claims in the paper's order
  (:func:`claim_paper`, :func:`claim_section`: the section, theorem or part their ``source``
  cites), each with its status, measured versus expected values and links to the figures that
  show it; each figure placed after the section of the first claim it shows;
- the full ledger, one row per claim sorted by paper then section: id, status, paper and
  section, statement, measured, expected; the row unfolds (``<details>``) to its tolerance,
  detail, source, code location (``resharpen verify --where``: file:line of the id, the check
  and the derivations it uses) and figures. Claims whose source is prior work, a known
  sequence, a round trip or a regression ("other") are in the ledger only;
- the figures that show no paper's claim;
- filters by paper, status and free text that act on the summaries, the ledger and the figures
  (a figure stays while a claim it shows does) and are kept in the URL's query string
  (``?paper=2510.22026&status=FAIL&q=gamma``), read back when the page loads;
- figures are matched to claims by the claim ids (and globs such as ``dyn.gamma_dot0.*``) named
  in the docstring of the figure script that wrote them (:data:`resharpen.paper_figs.FIGURES`;
  the docstrings are parsed, the scripts are not imported);
- the environment, in two sections: where the ledger was run (its profile and the provenance
  recorded in the ledger JSON: commit, dirty flag, versions, machine, time) and where the report
  was rendered (the renderer's own provenance).
"""
from __future__ import annotations

import base64
import datetime
import fnmatch
import html
import json
import platform
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from resharpen.papers import PAPERS, claim_paper, paper_of  # noqa: F401 (re-exported)
from resharpen.experiments.ledger.declarations import all_declarations
from resharpen.papers import is_transfer



VERSIONS = ("resharpen", "torch", "numpy", "scipy", "sympy", "matplotlib")
"""The distributions whose versions the environment section lists."""

_ID_TOKEN = re.compile(r"\b[a-z][a-z0-9_]*(?:\.[A-Za-z0-9_*{},]+)+")


@dataclass(frozen=True)
class Figure:
    """One embedded figure: its file stem, the figure script that drew it (None if unknown),
    the PNG bytes and the claim ids it illustrates."""

    stem: str
    module: str | None
    png: bytes
    claims: tuple[str, ...]




TOPICS_2510_08341 = (
    ("The model and the Lemma", r"model formula|\bLemma\b|lemma's"),
    ("The Theorem: 2/s precision and harmonic margins",
     r"Theorem|2/s|precision decays|softmax compresses|closed.forms?\b"),
    ("The construction and its dimension bound", r"dimension bound|construction"),
    ("Readouts: Post-Norm resharpens", r"readouts|Post-Norm resharpens|attn_out|post ->"),
    ("Training: Post-Norm and length generalization",
     r"Post-Norm can resharpen|dispersion|length generalization with"),
    ("Noisy gradients, averaging and dropout", r"nois|EMA|BEMA|averag|dropout"),
)
"""The sections of arXiv 2510.08341's summary, in reading order, and the source (or id) words
that put a claim in each: its claims' sources cite no numbered section (first match wins;
formal languages and OthelloGPT come last, then the other checks)."""

_REF = re.compile(r"\b(Sec(?:tion)?|Thm|Theorem|Lemma|Lem|Cor|Prop|Assumption|App(?:endix)?"
                  r"|Table|Figs?|eq)\.?\s*([A-Z](?:\.\d+)*|\d+(?:\.\d+)*)(?![\w.])")
_KIND = {"Section": "Sec", "Theorem": "Thm", "Lem": "Lemma", "Appendix": "App", "Figs": "Fig"}





def _number_key(number: str) -> tuple[int, ...]:
    return tuple(100 + ord(p) - ord("A") if p.isalpha() else int(p) for p in number.split("."))


def claim_section(record: dict) -> tuple[tuple, str, str]:
    """Where a claim sits in its paper: (sort key, section heading, reference). The first
    numbered reference of its ``source`` ("Thm 4.1", "Sec. 3", "Prop D.2": heading "Section 4",
    "Appendix D"; tables and figures after the sections, appendices last); for arXiv 2510.08341,
    whose sources name parts ("Lemma", "readouts") rather than numbers, the first of
    :data:`TOPICS_2510_08341` its source or id matches."""
    source = str(record.get("source", ""))
    paper = claim_paper(record)
    prefix = str(record.get("id", "")).split(".")[0]
    if paper == "2510.08341":
        cited = re.sub(r"arXiv 2510\.08341\s*(\(reconstructed\))?,?\s*", "", source).strip(" ;,")
        cited = (re.sub(r"\s*\([^()]*\)", "", cited).strip(" ;,") or cited.strip("()"))
        cited = cited if len(cited) <= 28 else cited[:27] + "\u2026"
        if prefix in ("lang", "langtrain", "othello"):
            return (len(TOPICS_2510_08341),), "Formal languages and OthelloGPT", cited
        text = f"{source} {record.get('id', '')}"
        for rank, (title, pattern) in enumerate(TOPICS_2510_08341):
            if re.search(pattern, text):
                return (rank,), title, cited
        return (len(TOPICS_2510_08341) + 1,), "Further checks", cited
    found = _REF.search(source)
    if not found:
        return (999,), "Other" if paper == "other" else "Unnumbered", ""
    kind, number = _KIND.get(found.group(1), found.group(1)), found.group(2)
    key = _number_key(number)
    if kind in ("Table", "Fig", "eq") and not number[0].isalpha():
        key = (90, *key)
    if number[0].isalpha():
        heading = f"Appendix {number[0]}"
    elif key[0] == 90:
        heading = "Tables and figures"
    else:
        heading = f"Section {number.split('.')[0]}"
    return key, heading, f"{kind} {number}"


def paper_rank(paper: str) -> int:
    return list(PAPERS).index(paper) if paper in PAPERS else len(PAPERS)


_GREEK = {n: chr(c) for n, c in (
    ("alpha", 0x3B1), ("beta", 0x3B2), ("gamma", 0x3B3), ("delta", 0x3B4), ("epsilon", 0x3B5),
    ("eta", 0x3B7), ("theta", 0x3B8), ("kappa", 0x3BA), ("lambda", 0x3BB), ("mu", 0x3BC),
    ("nu", 0x3BD), ("xi", 0x3BE), ("pi", 0x3C0), ("rho", 0x3C1), ("sigma", 0x3C3),
    ("tau", 0x3C4), ("phi", 0x3C6), ("psi", 0x3C8), ("omega", 0x3C9), ("Gamma", 0x393),
    ("Delta", 0x394), ("Theta", 0x398), ("Lambda", 0x39B), ("Pi", 0x3A0), ("Sigma", 0x3A3),
    ("Phi", 0x3A6), ("Omega", 0x3A9))}
_GREEK_RE = re.compile(r"(?<![A-Za-z_.])(" + "|".join(sorted(_GREEK, key=len, reverse=True))
                       + r")(?![A-Za-z])")
_GREEK_SUB = re.compile(r"(?<![\w.])([A-Za-z])_(" + "|".join(_GREEK) + r")(?![A-Za-z])")
_SYMBOLS = ((re.compile(r"<="), "\u2264"), (re.compile(r">="), "\u2265"),
            (re.compile(r"!="), "\u2260"), (re.compile(r"(?<![=<>])==(?!=)"), "="),
            (re.compile(r"->"), "\u2192"),
            (re.compile(r"<-(?!\d)"), "\u2190"), (re.compile(r"\+-"), "\u00b1"),
            (re.compile(r"(?<![A-Za-z])oo(?![A-Za-z])"), "\u221e"),
            (re.compile(r"(?<![A-Za-z_.])sqrt\s*(?=[\w(\u0370-\u03ff])"), "\u221a"),
            (re.compile(r"(?<=[\w)])\*(?=[\w(\u221a])"), "\u00b7"),
            (re.compile(r"(?<![A-Za-z_.])sum(?=_)"), "\u2211"))
_GROUP = r"(\{[^{}]*\}|\([^()]*\)|-?\d+(?:\.\d+)?|-?[^\W\d_]+\d*)"
_SUP = re.compile(r"\^" + _GROUP)
_SUB = re.compile(r"(?:(?<![\w.])([^\W\d_])|([|)\u2211]))_" + _GROUP)
_ANGLE = re.compile(r"&lt;(?=[^\W\d_])([^<>&]{1,40}?)(?<=[\w)])&gt;")


def _strip(group: str) -> str:
    return group[1:-1] if group[:1] in "({" and group[-1:] in ")}" else group


def math_html(text: object) -> str:
    """ASCII math as HTML, converted here (no script, no font, no network): Greek names to
    letters (``beta`` -> β, never inside an identifier such as ``ngpt_inv_alpha``), ``<=``,
    ``>=``, ``->``, ``+-``, ``oo``, ``sqrt`` and ``*`` to ≤ ≥ → ± ∞ √ ·, ``x^2``, ``2^(n-1)``,
    ``e^{b rho}`` to superscripts, ``C_n``, ``lambda_max``, ``S_{n+1}`` to subscripts (one
    letter before the "_", so ``attn_out`` stays), ``<x_i, x_j>`` to ⟨⟩. Escaped first."""
    raw = str(text)
    raw = _GREEK_RE.sub(lambda m: _GREEK[m.group(1)], raw)
    raw = _GREEK_SUB.sub(lambda m: f"{m.group(1)}_{_GREEK[m.group(2)]}", raw)  # P_theta
    for pattern, symbol in _SYMBOLS:
        raw = pattern.sub(symbol, raw)
    out = html.escape(raw, quote=False)
    out = re.sub(r"(?<![\w.])(min|max|arg ?max|arg ?min)_(\w)", r"\1<sub>\2</sub>", out)
    out = _ANGLE.sub(lambda m: f"\u27e8{m.group(1)}\u27e9", out)
    for _ in range(2):  # nested: ||C_n||_F^2
        out = _SUB.sub(lambda m: f"{m.group(1) or m.group(2)}<sub>{_strip(m.group(3))}</sub>",
                       out)
        out = _SUP.sub(lambda m: f"<sup>{_strip(m.group(1))}</sup>", out)
    return out


def plain_repr(text: object) -> str:
    """A Python repr made readable: quotes around list items dropped (``['0', '0']`` ->
    ``[0, 0]``)."""
    return re.sub(r"'([^'\[\]{},:]*)'(?=\s*[,\]}:])", r"\1", str(text))


def read_ledger(path: str | Path) -> dict:
    """The ledger JSON written by ``resharpen verify --json``: {profile, summary, claims}.
    ValueError naming the file and the command that writes it when it is missing or not one."""
    from resharpen.experiments.common.stored import read_json

    path = Path(path)
    try:
        data = read_json(path, "ledger", dict)  # capped, checked: one line naming the file
        claims = data["claims"]
        if not isinstance(claims, list) or not all(isinstance(c, dict) and "id" in c
                                                   for c in claims):
            raise TypeError("'claims' is not a list of records with an 'id'")
    except FileNotFoundError:
        raise ValueError(f"no ledger {str(path)!r}; write one with `resharpen verify --json "
                         f"{path}`") from None
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a ledger written by `resharpen verify --json` "
                         f"({type(exc).__name__}: {exc})") from None
    return data


def _expand_braces(token: str) -> list[str]:
    """``train.{ema,bema}.ood_kl`` -> both ids (one brace group at a time)."""
    found = re.search(r"\{([^{}]*)\}", token)
    if not found:
        return [token]
    head, tail = token[:found.start()], token[found.end():]
    return [x for part in found.group(1).split(",") for x in _expand_braces(head + part + tail)]


def claims_named(text: str, ids: list[str]) -> tuple[str, ...]:
    """The ids among ``ids`` that ``text`` names, exactly or by a glob (``dyn.gamma_dot0.*``,
    ``train.postnorm.long_runs*``, ``train.{ema,bema}.ood_kl.long*``), in the order of ``ids``."""
    patterns = [p.rstrip(".,;:") for token in _ID_TOKEN.findall(text)
                for p in _expand_braces(token)]
    return tuple(i for i in ids if any(fnmatch.fnmatchcase(i, p) for p in patterns))


def _literals(source: str) -> list[str]:
    """The string literals of a module's source, and the constant heads of its f-strings."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append(node.value)
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(
                node.values[0], ast.Constant):
            found.append(node.values[0].value)
    return [s for s in found if re.fullmatch(r"[A-Za-z0-9_]{4,}", s)]


def figure_module_of(stem: str, sources: dict[str, str]) -> str | None:
    """The figure script that writes ``stem.png``: the module with the longest name that is, or
    string literal in its source that is, the stem or a prefix of it ending at a "_"
    (``sc_margins``; ``fig_langtrain_`` + task; ``fig_train_grid`` + ``_placements``). None if
    no script matches."""
    best, length = None, 0
    for module, source in sources.items():
        for literal in [module, *_literals(source)]:
            hit = stem == literal or (stem.startswith(literal) and (
                literal.endswith("_") or stem[len(literal)] == "_"))
            if hit and len(literal) > length:
                best, length = module, len(literal)
    return best


def collect_figures(folder: str | Path | None, ids: list[str]) -> list[Figure]:
    """Every ``*.png`` of ``folder`` (sorted by name), with the figure script that drew it and
    the claims its docstring names. An absent folder gives no figures."""
    import ast

    from resharpen.paper_figs import FIGURES

    if folder is None or not Path(folder).is_dir():
        return []
    from resharpen.experiments.common.package_files import folder as package_folder

    root = package_folder("paper_figs")
    sources = {name: (root / slice_ / f"{name}.py").read_text() for name, slice_ in FIGURES.items()}
    docstrings = {name: ast.get_docstring(ast.parse(text)) or "" for name, text in sources.items()}
    figures = []
    for path in sorted(Path(folder).glob("*.png")):
        module = figure_module_of(path.stem, sources)
        named = claims_named(docstrings[module], ids) if module else ()
        figures.append(Figure(path.stem, module, path.read_bytes(), named))
    return figures


def code_locations(ids: list[str]) -> dict[str, list[str]]:
    """``resharpen verify --where`` of each registered claim among ``ids``: "file:line what",
    the file relative to the package (``experiments/set_complement/claims.py:317 ...``)."""
    from resharpen.claims import all_claims
    from resharpen.experiments import ledger

    chosen = set(ids)
    return {c.id: ledger.where(c) for c in all_claims() if c.id in chosen}


def _provenance_items(record: dict) -> dict[str, str]:
    """A provenance record (:func:`resharpen.experiments.common.provenance.provenance`) as
    definition-list items."""
    items = {}
    commit = record.get("commit")
    dirty = record.get("dirty")
    items["commit"] = (f"{commit}{' (dirty working tree)' if dirty else ''}" if commit
                       else "unknown (not a git checkout)")
    items["created"] = str(record.get("created", "?"))
    for name, value in (record.get("versions") or {}).items():
        items[name] = str(value) if value is not None else "not installed"
    machine = record.get("machine") or {}
    items["cpu"] = (f"{machine.get('cpu', '?')} ({machine.get('cpus', '?')} CPUs, "
                    f"{machine.get('usable_cpus', '?')} usable)")
    threads = record.get("threads") or {}
    if threads:
        items["threads"] = ", ".join(f"{k} {v}" for k, v in threads.items() if v is not None) \
            or "not set"
    items["platform"] = str(machine.get("platform", "?"))
    return items


def environment(ledger: dict, ledger_path: str | Path) -> dict[str, dict[str, str]]:
    """Two sections: where the ledger was run (its profile, summary, checks' time and the
    provenance recorded in the ledger JSON: commit, dirty flag, versions, machine, time; never
    the file's time, which a copy changes) and where this report was rendered (the renderer's
    own provenance and versions)."""
    from importlib.metadata import PackageNotFoundError, version

    from resharpen.experiments.common.provenance import provenance

    run = {"profile": str(ledger.get("profile", "?"))}
    summary = ledger.get("summary") or {}
    run["ledger summary"] = ", ".join(f"{n} {s}" for s, n in summary.items())
    seconds = sum(float(c.get("seconds") or 0) for c in ledger["claims"])
    run["checks' time"] = f"{seconds:.0f} s (sum over claims)"
    run["ledger file"] = str(ledger_path)
    recorded = ledger.get("provenance")
    if isinstance(recorded, dict):
        run.update(_provenance_items(recorded))
    else:
        run["provenance"] = "not recorded (a ledger written before provenance was recorded)"
    now = datetime.datetime.now(datetime.timezone.utc)
    rendered = {"report written": f"{now:%Y-%m-%d %H:%M:%S} UTC"}
    rendered.update(_provenance_items(provenance()))
    del rendered["created"]
    rendered["python"] = sys.version.split()[0]
    for name in VERSIONS:
        try:
            rendered[name] = version(name)
        except PackageNotFoundError:
            rendered[name] = "not installed"
    rendered["platform"] = platform.platform()
    return {"The ledger: where and how it was run (recorded in the ledger JSON)": run,
            "This report: where it was rendered": rendered}


_STYLE = """
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:0 auto;padding:1em 1.5em;color:#222;max-width:90em;
line-height:1.4}
h1{font-size:1.45em;margin:.2em 0}h2{font-size:1.2em;margin:1.6em 0 .3em}
h3{font-size:1em;margin:1em 0 .3em;color:#444}
header p{margin:.3em 0}nav{font-size:.95em}
.filters{display:flex;gap:.5em 1em;align-items:center;flex-wrap:wrap;margin:.5em 0;
padding:.4em .6em;background:#f4f6f8;border:1px solid #dde;border-radius:4px;position:sticky;
top:0;z-index:2}
.filters input{width:12em;max-width:100%}.filters select{max-width:100%;min-width:0}#paper{width:24em}
.filters label{max-width:100%}
section.paper{border-top:2px solid #99a;margin-top:1.2em}
.tally{color:#555;font-size:.9em;margin:.2em 0}
ol.stmts{list-style:none;padding:0;margin:0}
ol.stmts li{display:grid;grid-template-columns:7.5em 6em minmax(0,1fr) minmax(0,22em);gap:.6em;
padding:.25em 0;border-bottom:1px solid #eee;font-size:.9em;align-items:baseline}
.ref{color:#555;font-size:.9em}.mv{font-family:monospace;font-size:.9em;overflow-wrap:anywhere}
.mv b{font-weight:normal;color:#000}.mv i{font-style:normal;color:#777}
.figs a{font-size:.85em;margin-right:.5em}
.PASS{color:#176b2c;font-weight:bold}.FAIL{color:#b00020;font-weight:bold}
.INCONCLUSIVE{color:#8a5a00;font-weight:bold}.ERROR{color:#6a1b9a;font-weight:bold}
.figrow{display:flex;flex-wrap:wrap;gap:.8em;margin:.6em 0;align-items:flex-start}
figure{margin:0;padding:.4em;border:1px solid #ddd;border-radius:4px;width:min(100%,34em)}
figure img{width:100%;height:auto;max-height:24em;object-fit:contain;cursor:zoom-in;display:block}
figure.zoom{width:100%}figure.zoom img{cursor:zoom-out;max-width:80em;max-height:none}
figcaption{font-size:.8em;color:#444;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%;font-size:.85em;table-layout:fixed}
col.c-id{width:16em}col.c-st{width:6.5em}col.c-pa{width:9em}col.c-me{width:13em}col.c-ex{width:11em}
th,td{border-bottom:1px solid #ddd;padding:.25em .4em;text-align:left;vertical-align:top}
th{background:#f4f4f4}
td.num{font-family:monospace;overflow-wrap:anywhere}
td code{overflow-wrap:anywhere}
details{font-size:.95em}details summary{cursor:pointer;color:#345}
code,pre{font-size:.9em}pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.2em 0}
dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.2em 1em}dt{font-weight:bold}
dd{margin:0;overflow-wrap:anywhere}
[hidden]{display:none!important}
tr[id],figure[id],section[id],h2[id]{scroll-margin-top:4.5em}
@media (max-width:800px){
body{padding:.6em}h1{font-size:1.2em}
ol.stmts li{grid-template-columns:auto minmax(0,1fr);gap:.1em .6em}
ol.stmts li>span:nth-child(3),ol.stmts li .mv{grid-column:1/3}
#ledger thead{display:none}#ledger tr{display:block;border-bottom:1px solid #ccc;padding:.3em 0}
#ledger td{display:block;border:0;padding:.1em .2em;max-width:none}
#ledger td:nth-child(-n+3){display:inline-block;margin-right:.5em}#ledger td:nth-child(3) br{display:none}#ledger td:nth-child(3) .ref:before{content:" "}
#ledger td.num{display:inline-block;width:50%;vertical-align:top}#ledger td.num details{display:inline-block;vertical-align:top}
#ledger colgroup{display:none}
#ledger td.num:before{content:attr(data-label) ": ";color:#777;font-family:system-ui}
dl{grid-template-columns:minmax(0,1fr)}dd{margin-left:1em}
.filters{position:static}
}
"""

_SCRIPT = """
(function () {
  var paper = document.getElementById('paper'), status = document.getElementById('status'),
      text = document.getElementById('text'), count = document.getElementById('count');
  var rows = Array.prototype.slice.call(document.querySelectorAll('#ledger tbody tr'));
  var items = Array.prototype.slice.call(document.querySelectorAll('li[data-claim]'));
  var figs = Array.prototype.slice.call(document.querySelectorAll('figure[data-claims]'));
  var groups = Array.prototype.slice.call(document.querySelectorAll('.group, section.paper, .figgroup'));
  var params = new URLSearchParams(location.search);
  if (params.get('paper')) { paper.value = params.get('paper'); }
  if (params.get('status')) { status.value = params.get('status'); }
  if (params.get('q')) { text.value = params.get('q'); }
  function apply() {
    var p = paper.value, s = status.value, t = text.value.toLowerCase(), shown = 0, nfig = 0;
    var ok = {};
    rows.forEach(function (row) {
      var pass = (!p || row.dataset.paper === p) && (!s || row.dataset.status === s) &&
                 (!t || row.textContent.toLowerCase().indexOf(t) >= 0);
      row.hidden = !pass;
      ok[row.dataset.claim] = pass;
      if (pass) { shown += 1; }
    });
    items.forEach(function (li) { li.hidden = !ok[li.dataset.claim]; });
    var any = p || s || t;
    figs.forEach(function (fig) {
      var named = fig.dataset.claims ? fig.dataset.claims.split(' ') : [];
      var pass = !any || named.some(function (i) { return ok[i]; }) ||
                 (!p && !s && t && fig.dataset.stem.toLowerCase().indexOf(t) >= 0);
      fig.hidden = !pass;
      if (pass) { nfig += 1; }
    });
    groups.slice().reverse().forEach(function (g) {
      g.hidden = !g.querySelector('li[data-claim]:not([hidden]), figure:not([hidden])');
    });
    count.textContent = shown + ' of ' + rows.length + ' claims, ' + nfig + ' of ' +
                        figs.length + ' figures shown';
    var q = new URLSearchParams();
    if (p) { q.set('paper', p); }
    if (s) { q.set('status', s); }
    if (t) { q.set('q', text.value); }
    var search = q.toString();
    if (('?' + search) !== location.search && (search || location.search)) {
      try { history.replaceState(null, '', (search ? '?' + search : location.pathname) + location.hash); }
      catch (e) { /* a browser that refuses: the filters still work */ }
    }
  }
  [paper, status].forEach(function (el) { el.addEventListener('change', apply); });
  text.addEventListener('input', apply);
  document.addEventListener('click', function (ev) {
    var img = ev.target.closest && ev.target.closest('figure img');
    if (img) { img.parentNode.classList.toggle('zoom'); }
  });
  apply();
})();
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def _options(name: str, values: list[tuple[str, str]]) -> str:
    items = "".join(f'<option value="{_e(v)}">{_e(label)}</option>' for v, label in values)
    return f'<select id="{name}"><option value="">all</option>{items}</select>'


_LONG = 90
"""Measured or expected values longer than this (characters) fold away in the summary."""


def _measured(r: dict) -> str:
    measured, expected = plain_repr(r.get("measured", "")), plain_repr(r.get("expected", ""))
    body = f"<i>measured</i> <b>{math_html(measured)}</b> <i>expected</i> <b>{math_html(expected)}</b>"
    if len(measured) + len(expected) > _LONG:
        return f"<details><summary>measured vs expected</summary>{body}</details>"
    return body


def _folded(value: object, width: int = 48) -> str:
    """A measured or expected value for a ledger cell: folded after ``width`` characters."""
    text = plain_repr(value)
    if len(text) <= width:
        return math_html(text)
    return (f"<details><summary>{math_html(text[:width - 8])}\u2026</summary>"
            f"{math_html(text)}</details>")


def _figure_html(fig: Figure) -> str:
    data = base64.b64encode(fig.png).decode("ascii")
    links = ", ".join(f'<a href="#claim-{_e(i)}">{_e(i)}</a>' for i in fig.claims)
    return (f'<figure id="fig-{_e(fig.stem)}" data-stem="{_e(fig.stem)}" '
            f'data-claims="{_e(" ".join(fig.claims))}"><img alt="{_e(fig.stem)}" loading="lazy" '
            f'src="data:image/png;base64,{data}"><figcaption><code>{_e(fig.stem)}</code> '
            f'(script: {_e(fig.module or "unknown")}; click to enlarge); shows: '
            f'{links or "no claim named"}'
            f'</figcaption></figure>')


def render(ledger: dict, figures: list[Figure], where: dict[str, list[str]],
           env: dict, full: dict[str, dict] | None = None) -> str:
    """The page (a string) from a ledger, its figures, the code locations and the environment:
    one summary per paper (its claims in the paper's order, each with its status, measured
    versus expected and the figures that show it, the figures placed after the section of the
    first claim they show), the full ledger sorted by paper then section, figures that show no
    paper's claim, and the environment. ``full``: id -> record of the full-size record
    (results/full/ledger.json), shown beside each claim of a ledger of another profile, so the
    page opens with the verdict at both sizes as docs/verdicts/ gives them."""
    records = ledger["claims"]
    where_of = {r["id"]: claim_section(r) for r in records}
    paper_of_id = {r["id"]: claim_paper(r) for r in records}
    order = sorted(range(len(records)), key=lambda k: (
        paper_rank(paper_of_id[records[k]["id"]]), where_of[records[k]["id"]][0], k))
    records = [records[k] for k in order]
    shown_in: dict[str, list[str]] = {}
    for fig in figures:
        for i in fig.claims:
            shown_in.setdefault(i, []).append(fig.stem)
    statuses = sorted({r.get("status", "?") for r in records})
    papers = sorted({paper_of_id[r["id"]] for r in records}, key=paper_rank)

    def fig_links(claim_id: str) -> str:
        return " ".join(f'<a href="#fig-{_e(s)}">fig: {_e(s)}</a>'
                        for s in shown_in.get(claim_id, []))

    placed: set[str] = set()
    summaries, tallies = [], {}
    for paper in [p for p in PAPERS if p in papers]:
        mine = [r for r in records if paper_of_id[r["id"]] == paper]
        tally = ", ".join(f"{n} {s}" for s in statuses
                          if (n := sum(r.get("status") == s for r in mine)))
        tallies[paper] = tally
        parts, heading, current = [], None, []

        def flush() -> None:
            if not current:
                return
            figs_here = []
            for r in current:
                for fig in figures:
                    if r["id"] in fig.claims and fig.stem not in placed:
                        placed.add(fig.stem)
                        figs_here.append(_figure_html(fig))
            row = f'<div class="figrow">{"".join(figs_here)}</div>' if figs_here else ""
            parts.append(f'<div class="group"><h3>{_e(heading)}</h3><ol class="stmts">'
                         + "".join(_summary_item(r, where_of[r["id"]][2], fig_links(r["id"]),
                                                 None if full is None else
                                                 (full.get(r["id"]) or {}).get("status",
                                                                               "not run"))
                                   for r in current) + f"</ol>{row}</div>")
            current.clear()

        for r in mine:
            if where_of[r["id"]][1] != heading:
                flush()
                heading = where_of[r["id"]][1]
            current.append(r)
        flush()
        summaries.append(
            f'<section class="paper" id="paper-{_e(paper)}" data-paper="{_e(paper)}">'
            f'<h2>{_e(PAPERS[paper])}</h2><p class="tally">{len(mine)} statements: {_e(tally)}'
            f'</p>{"".join(parts)}</section>')
    rows = []
    for r in records:
        status = r.get("status", "?")
        mark = " (erratum reproduced)" if r.get("erratum") and status == "PASS" else ""
        figs = fig_links(r["id"])
        places = "".join(f"<pre>{_e(line)}</pre>" for line in where.get(r["id"], []))
        paper = paper_of_id[r["id"]]
        rows.append(
            f'<tr id="claim-{_e(r["id"])}" data-claim="{_e(r["id"])}" data-paper="{_e(paper)}" '
            f'data-status="{_e(status)}"><td><code>{_e(r["id"])}</code></td>'
            f'<td class="{_e(status)}">{_e(status)}{_e(mark)}</td>'
            f'<td>{_e(paper)}<br><span class="ref">{_e(where_of[r["id"]][2] or where_of[r["id"]][1])}'
            f'</span></td>'
            f'<td><details><summary>{math_html(r.get("statement", ""))}</summary>'
            f'<p>tolerance: {math_html(r.get("tolerance", ""))}</p>'
            f'<p>{math_html(plain_repr(r.get("detail", "")))}</p>'
            f'<p>source: {_e(r.get("source", ""))}; kind: {_e(r.get("kind", ""))}</p>'
            f'{places}{"<p>shown in: " + figs + "</p>" if figs else ""}</details></td>'
            f'<td class="num" data-label="measured">{_folded(r.get("measured", ""))}</td>'
            f'<td class="num" data-label="expected">{_folded(r.get("expected", ""))}</td></tr>')
    rest = [_figure_html(f) for f in figures if f.stem not in placed]
    summary = ", ".join(f"{sum(r.get('status') == s for r in records)} {s}" for s in statuses)
    others = sum(paper_of_id[r["id"]] == "other" for r in records)
    declared = all_declarations()
    held = sum(is_transfer(declared.get(r["id"], {})) for r in records)
    sections = env if all(isinstance(v, dict) for v in env.values()) else {"": env}
    env_html = "".join((f"<h3>{_e(title)}</h3>" if title else "") + "<dl>"
                       + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items.items())
                       + "</dl>" for title, items in sections.items())
    nav = " &middot; ".join(f'<a href="#paper-{_e(p)}">arXiv {_e(p)}</a> ({_e(tallies[p])})'
                            for p in PAPERS if p in papers)
    no_figs = "<p>No figures (run <code>resharpen figs</code>).</p>" if not figures else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>resharpen report: {len(records)} claims, profile {_e(ledger.get("profile", "?"))}</title>
<style>{_STYLE}</style></head><body>
<header><h1>resharpen: what the three papers claim, and what was measured</h1>
<p>{len(records)} claims ({_e(summary)}), profile <code>{_e(ledger.get("profile", "?"))}</code>;
{others} of them are supporting checks (prior work, known sequences, round trips), listed in the
full ledger only; {held} hold a paper's statement against the package's transformers, beyond the
idealized setting it is proved in.</p>
<details><summary>what the statuses mean, how to rerun</summary><p>PASS: the check holds at its
tolerance; FAIL: a measured disagreement; INCONCLUSIVE: too little data to decide; ERROR: the
check raised; an erratum's PASS means the counterexample is reproduced. Rerun with
<code>make reproduce</code>, one claim with <code>resharpen verify --only ID</code>. Math is
written in Unicode (converted from the checks' ASCII when this page was written); a statement's
row in the full ledger unfolds to its tolerance, detail, source and code.</p></details>
<nav>{nav} &middot; <a href="#ledger-title">full ledger</a> &middot; <a
href="#figures-title">other figures</a> &middot; <a href="#environment">environment</a></nav>
</header>
<div class="filters"><label>paper {_options("paper", [(p, PAPERS.get(p, "other checks")) for p in papers])}</label>
<label>status {_options("status", [(s, s) for s in statuses])}</label>
<label>text <input id="text" type="search" placeholder="id, statement, detail"></label>
<span id="count"></span></div>
{chr(10).join(summaries)}
<h2 id="ledger-title">Full ledger, by paper and section</h2>
<table id="ledger"><colgroup><col class="c-id"><col class="c-st"><col class="c-pa"><col>
<col class="c-me"><col class="c-ex"></colgroup><thead><tr><th>id</th><th>status</th><th>paper, section</th><th>statement
</th><th>measured</th><th>expected</th></tr></thead><tbody>
{chr(10).join(rows)}
</tbody></table>
<h2 id="figures-title">Other figures</h2>
<div class="figgroup"><div class="figrow">{chr(10).join(rest)}</div></div>
{no_figs or ("" if rest else "<p>Every figure is shown with its paper's summary.</p>")}
<h2 id="environment">Environment</h2>{env_html}
<script>{_SCRIPT}</script>
</body></html>
"""


def _summary_item(r: dict, reference: str, figs: str, full_status: str | None = None) -> str:
    status = r.get("status", "?")
    mark = " (erratum)" if r.get("erratum") else ""
    full = (f'<br><small title="at full size (results/full/ledger.json)">full size: '
            f'{_e(full_status)}</small>' if full_status is not None else "")
    return (f'<li data-claim="{_e(r["id"])}"><span class="ref" title="{_e(r.get("source", ""))}">'
            f'{_e(reference)}</span><span class="st {_e(status)}">{_e(status)}{_e(mark)}{full}'
            f'</span>'
            f'<span>{math_html(r.get("statement", ""))} <a href="#claim-{_e(r["id"])}" '
            f'class="ref">{_e(r["id"])}</a>{f" <span class=figs>{figs}</span>" if figs else ""}'
            f'</span><span class="mv">{_measured(r)}</span></li>')


def write_report(target: str | Path, ledger_path: str | Path = "out/ledger.json",
                 figs: str | Path | None = "out/figs") -> Path:
    """Write the report of the ledger JSON ``ledger_path`` and the PNGs of ``figs`` to
    ``target`` (atomically) and return its path. ValueError for a missing or malformed ledger."""
    from resharpen.experiments.common.io import atomic_write_text

    from resharpen.verdicts import FULL_LEDGER, read_records

    ledger = read_ledger(ledger_path)
    ids = [r["id"] for r in ledger["claims"]]
    full = None if ledger.get("profile") == "full" else read_records(FULL_LEDGER)
    page = render(ledger, collect_figures(figs, ids), code_locations(ids),
                  environment(ledger, ledger_path), full)
    return atomic_write_text(target, page)
