"""The self-contained HTML report: the claim ledger, the figures and the environment in one file.

``resharpen report --html out/report.html`` (and ``make reproduce``) writes it from a ledger
JSON (``resharpen verify --json out/ledger.json``) and a figures folder (``resharpen figs``,
``out/figs``). The page needs no server and no network: the figures are embedded as PNG data
URIs, the style and the filter script are inline, and it loads nothing else. It holds

- the ledger, one row per claim: id, paper, status, statement, measured, expected, tolerance,
  detail, source, code location (``resharpen verify --where``: file:line of the id, the check
  and the derivations it uses) and the figures that show the claim; filterable by paper, status
  and free text;
- the figures, each with the claims it illustrates: the claim ids (and globs such as
  ``dyn.gamma_dot0.*``) named in the docstring of the figure script that wrote it
  (:data:`resharpen.paper_figs.FIGURES`);
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

PAPERS = {
    "2510.08341": "Post-Norm can resharpen attention (arXiv 2510.08341)",
    "2510.22026": "Normalization in attention dynamics (arXiv 2510.22026)",
    "2608.09417": "Why Post-Norm transformers collapse (arXiv 2608.09417)",
}
"""The papers whose claims the ledger checks, by arXiv id; any other source is "other"."""

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


def paper_of(source: str) -> str:
    """The arXiv id of a claim's ``source`` ("2510.08341", ...) or "other" (known sequences,
    package round trips, published perft counts)."""
    found = re.search(r"\b(\d{4}\.\d{5})\b", source)
    return found.group(1) if found and found.group(1) in PAPERS else "other"


def read_ledger(path: str | Path) -> dict:
    """The ledger JSON written by ``resharpen verify --json``: {profile, summary, claims}.
    ValueError naming the file and the command that writes it when it is missing or not one."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
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
    root = Path(__file__).resolve().parent / "paper_figs"
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
    the file relative to the checkout (``experiments/set_complement/claims.py:317 ...``)."""
    from resharpen.claims import all_claims
    from resharpen.experiments import ledger

    root = Path(__file__).resolve().parent.parent  # the checkout: shown paths relative to it
    linked = re.compile(re.escape(f"{root}/resharpen/") + r"(?=(theory|constructions|experiments"
                        r"|paper_figs)/)")
    chosen = set(ids)
    return {c.id: [linked.sub("", line).replace(f"{root}/", "") for line in ledger.where(c)]
            for c in all_claims() if c.id in chosen}


def _provenance_items(record: dict) -> dict[str, str]:
    """A provenance record (:func:`resharpen.experiments.core.provenance.provenance`) as
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

    from resharpen.experiments.core.provenance import provenance

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
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:100em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em}
table{border-collapse:collapse;width:100%;font-size:.85em}
th,td{border-bottom:1px solid #ddd;padding:.3em .4em;text-align:left;vertical-align:top}
th{background:#f4f4f4;position:sticky;top:0}
td.num{font-family:monospace;white-space:pre-wrap;max-width:14em;overflow-wrap:anywhere}
.PASS{color:#176b2c;font-weight:bold}.FAIL{color:#b00020;font-weight:bold}
.INCONCLUSIVE{color:#8a5a00;font-weight:bold}.ERROR{color:#6a1b9a;font-weight:bold}
.filters{display:flex;gap:1em;align-items:center;flex-wrap:wrap;margin:.5em 0}
details{font-size:.95em}code,pre{font-size:.9em}pre{white-space:pre-wrap;margin:.2em 0}
figure{margin:1em 0;padding:.5em;border:1px solid #ddd}figure img{max-width:min(100%,70em)}
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dt{font-weight:bold}
"""

_SCRIPT = """
(function () {
  var paper = document.getElementById('paper'), status = document.getElementById('status'),
      text = document.getElementById('text'), count = document.getElementById('count');
  var rows = Array.prototype.slice.call(document.querySelectorAll('#ledger tbody tr'));
  function apply() {
    var p = paper.value, s = status.value, t = text.value.toLowerCase(), shown = 0;
    rows.forEach(function (row) {
      var ok = (!p || row.dataset.paper === p) && (!s || row.dataset.status === s) &&
               (!t || row.textContent.toLowerCase().indexOf(t) >= 0);
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    count.textContent = shown + ' of ' + rows.length + ' claims shown';
  }
  [paper, status].forEach(function (el) { el.addEventListener('change', apply); });
  text.addEventListener('input', apply);
  apply();
})();
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def _options(name: str, values: list[tuple[str, str]]) -> str:
    items = "".join(f'<option value="{_e(v)}">{_e(label)}</option>' for v, label in values)
    return f'<select id="{name}"><option value="">all</option>{items}</select>'


def render(ledger: dict, figures: list[Figure], where: dict[str, list[str]],
           env: dict) -> str:
    """The page (a string) from a ledger, its figures, the code locations and the environment."""
    records = ledger["claims"]
    shown_in: dict[str, list[str]] = {}
    for fig in figures:
        for i in fig.claims:
            shown_in.setdefault(i, []).append(fig.stem)
    statuses = sorted({r.get("status", "?") for r in records})
    papers = sorted({paper_of(r.get("source", "")) for r in records})
    rows = []
    for r in records:
        status = r.get("status", "?")
        mark = " (erratum reproduced)" if r.get("erratum") and status == "PASS" else ""
        figs = ", ".join(f'<a href="#fig-{_e(s)}">{_e(s)}</a>' for s in shown_in.get(r["id"], []))
        places = "".join(f"<pre>{_e(line)}</pre>" for line in where.get(r["id"], []))
        rows.append(
            f'<tr id="claim-{_e(r["id"])}" data-paper="{_e(paper_of(r.get("source", "")))}" '
            f'data-status="{_e(status)}"><td><code>{_e(r["id"])}</code></td>'
            f'<td>{_e(paper_of(r.get("source", "")))}</td>'
            f'<td class="{_e(status)}">{_e(status)}{_e(mark)}</td>'
            f'<td>{_e(r.get("statement", ""))}<details><summary>detail, source, code'
            f'{", figures" if figs else ""}</summary><p>{_e(r.get("detail", ""))}</p>'
            f'<p>source: {_e(r.get("source", ""))}; kind: {_e(r.get("kind", ""))}</p>'
            f'{places}{"<p>shown in: " + figs + "</p>" if figs else ""}</details></td>'
            f'<td class="num">{_e(r.get("measured", ""))}</td>'
            f'<td class="num">{_e(r.get("expected", ""))}</td>'
            f'<td class="num">{_e(r.get("tolerance", ""))}</td></tr>')
    figure_html = []
    for fig in figures:
        data = base64.b64encode(fig.png).decode("ascii")
        links = ", ".join(f'<a href="#claim-{_e(i)}">{_e(i)}</a>' for i in fig.claims)
        figure_html.append(
            f'<figure id="fig-{_e(fig.stem)}"><img alt="{_e(fig.stem)}" '
            f'src="data:image/png;base64,{data}"><figcaption><code>{_e(fig.stem)}</code> '
            f'(script: {_e(fig.module or "unknown")}); claims: {links or "none named"}'
            f'</figcaption></figure>')
    summary = ", ".join(f"{sum(r.get('status') == s for r in records)} {s}" for s in statuses)
    sections = env if all(isinstance(v, dict) for v in env.values()) else {"": env}
    env_html = "".join((f"<h3>{_e(title)}</h3>" if title else "") + "<dl>"
                       + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items.items())
                       + "</dl>" for title, items in sections.items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>resharpen report: {len(records)} claims, profile {_e(ledger.get("profile", "?"))}</title>
<style>{_STYLE}</style></head><body>
<h1>resharpen: claim ledger and figures</h1>
<p>{len(records)} claims ({_e(summary)}), profile <code>{_e(ledger.get("profile", "?"))}</code>.
PASS: the check holds at its tolerance; FAIL: a measured disagreement; INCONCLUSIVE: too little
data to decide; ERROR: the check raised. An erratum's PASS means the counterexample is
reproduced. Rerun with <code>make reproduce</code>; any claim with
<code>resharpen verify --only ID</code>.</p>
<h2>Ledger</h2>
<div class="filters"><label>paper {_options("paper", [(p, PAPERS.get(p, p)) for p in papers])}</label>
<label>status {_options("status", [(s, s) for s in statuses])}</label>
<label>text <input id="text" type="search" placeholder="id, statement, detail"></label>
<span id="count"></span></div>
<table id="ledger"><thead><tr><th>id</th><th>paper</th><th>status</th><th>statement</th><th>measured</th>
<th>expected</th><th>tolerance</th></tr></thead><tbody>
{chr(10).join(rows)}
</tbody></table>
<h2>Figures</h2>
{chr(10).join(figure_html) or "<p>No figures (run <code>resharpen figs</code>).</p>"}
<h2>Environment</h2>{env_html}
<script>{_SCRIPT}</script>
</body></html>
"""


def write_report(target: str | Path, ledger_path: str | Path = "out/ledger.json",
                 figs: str | Path | None = "out/figs") -> Path:
    """Write the report of the ledger JSON ``ledger_path`` and the PNGs of ``figs`` to
    ``target`` (atomically) and return its path. ValueError for a missing or malformed ledger."""
    from resharpen.experiments.core.io import atomic_write_text

    ledger = read_ledger(ledger_path)
    ids = [r["id"] for r in ledger["claims"]]
    page = render(ledger, collect_figures(figs, ids), code_locations(ids),
                  environment(ledger, ledger_path))
    return atomic_write_text(target, page)
