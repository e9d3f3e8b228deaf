"""The derivations of `resharpen derive`, gathered from the theory slices that have them.

Each slice lists its derivations as (name, title, compute) and a legend of the symbols they
print (``DERIVATION_SYMBOLS``). This module selects them by name (globs), derives them one at a
time (so the output streams), prints each in a tidier but equal form (:func:`tidy`), and writes
the plain-text or the standalone LaTeX rendering, each with the legend of the symbols it uses.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Callable, Iterator

import sympy as sp


@dataclass(frozen=True)
class Derivation:
    name: str
    title: str
    compute: Callable[[], sp.Basic]
    section: str


@dataclass(frozen=True)
class Result:
    derivation: Derivation
    expr: sp.Basic


def sections() -> list[tuple[str, dict[str, str], list[Derivation]]]:
    """(paper title, symbol legend, derivations) of every slice, Set Complement first."""
    from resharpen.theory.collapse import attention
    from resharpen.theory.dynamics import speed
    from resharpen.theory.set_complement import formulas

    papers = ((formulas, "arXiv 2510.08341: the Set Complement Task"),
              (speed, "arXiv 2510.22026: normalization as speed regulation"),
              (attention, "arXiv 2608.09417: Post-Norm collapse, the attention step"))
    return [(title, module.DERIVATION_SYMBOLS,
             [Derivation(name, heading, compute, title)
              for name, heading, compute in module.derivations()])
            for module, title in papers]


def select(only: list[str] | None = None) -> list[Derivation]:
    """The derivations whose name matches a glob of ``only`` (all when None or empty), in order;
    ValueError naming the names when a glob matches none."""
    every = [d for _, _, rows in sections() for d in rows]
    for pattern in only or ():
        if not any(fnmatch.fnmatchcase(d.name, pattern) for d in every):
            raise ValueError(f"--only {pattern!r} matches no derivation; names are "
                             + ", ".join(d.name for d in every))
    return [d for d in every if not only or any(fnmatch.fnmatchcase(d.name, p) for p in only)]


def legend(section: str) -> dict[str, str]:
    """The symbol legend of the section titled ``section``."""
    return next(symbols for title, symbols, _ in sections() if title == section)


def derive(chosen: list[Derivation]) -> Iterator[Result]:
    """Derive each derivation in turn, its expression tidied."""
    for d in chosen:
        yield Result(d, tidy(d.compute()))


# ----------------------------------------------------------------------------- tidy forms
def _powers_of_sums(expr: sp.Basic) -> int:
    return sum(1 for e in sp.preorder_traversal(expr) if e.is_Pow and e.base.is_Add
               and e.exp != sp.S.Half)


def _split(expanded: sp.Expr, x: sp.Symbol) -> sp.Expr:
    """The terms with ``x`` factored, plus the terms without it factored."""
    with_x = [term for term in sp.Add.make_args(expanded) if term.has(x)]
    rest = [term for term in sp.Add.make_args(expanded) if not term.has(x)]
    return sp.factor(sp.Add(*with_x)) + sp.factor(sp.Add(*rest))


def _shortest(expr: sp.Expr) -> sp.Expr:
    """The shortest of a sum, its factored form, its forms collected in each symbol with factored
    coefficients and its forms split by each symbol (:func:`_split`); a power of a sum counts
    as two operations more (it hides terms)."""
    expanded = sp.expand(expr)
    candidates = [expr, sp.factor(expr)]
    for x in sorted(expr.free_symbols, key=str):
        candidates += [sp.collect(expanded, x, func=sp.factor), _split(expanded, x)]
    return min(candidates, key=lambda c: (sp.count_ops(c) + 2 * _powers_of_sums(c), len(str(c))))


def tidy(expr: sp.Basic) -> sp.Basic:
    """An equal, shorter form: each polynomial sub-sum replaced by its shortest form
    (``s**2 - s*(s - v) - s`` -> ``s*(v - 1)``). Only the printed form changes."""
    if isinstance(expr, sp.Tuple):
        return sp.Tuple(*(tidy(e) for e in expr))
    if not isinstance(expr, sp.Expr):
        return expr
    return expr.replace(lambda e: e.is_Add and len(e.free_symbols) > 1, _shortest)


# ----------------------------------------------------------------------------- symbols
def symbol_names(expr: sp.Basic) -> set[str]:
    """The names of the free symbols ``expr`` prints."""
    return {str(x) for x in expr.free_symbols}


def used_legend(results: list[Result]) -> dict[str, str]:
    """The legend entries of the symbols the results print, in legend order; KeyError naming a
    printed symbol the section's legend lacks."""
    if not results:
        return {}
    table = legend(results[0].derivation.section)
    used = set().union(*(symbol_names(r.expr) for r in results))
    missing = sorted(used - set(table))
    if missing:
        raise KeyError(f"symbols {missing} of {results[0].derivation.section!r} are not in its "
                       "DERIVATION_SYMBOLS legend")
    return {name: meaning for name, meaning in table.items() if name in used}


def by_section(results: list[Result]) -> list[tuple[str, list[Result]]]:
    out: list[tuple[str, list[Result]]] = []
    for r in results:
        if not out or out[-1][0] != r.derivation.section:
            out.append((r.derivation.section, []))
        out[-1][1].append(r)
    return out


# ----------------------------------------------------------------------------- rendering
def text_block(result: Result) -> str:
    """One derivation as plain text: a '## name: title' line and the expression."""
    return f"## {result.derivation.name}: {result.derivation.title}\n{sp.sstr(result.expr)}\n"


def text_legend(results: list[Result]) -> str:
    """The 'symbols:' block of one section's results."""
    lines = ["symbols:"] + [f"  {name:9s} {meaning}"
                            for name, meaning in used_legend(results).items()]
    return "\n".join(lines) + "\n"


def text_output(chosen: list[Derivation], results: list[Result]) -> Iterator[str]:
    """The plain-text output piece by piece, each derivation as soon as it is derived: per
    section a '# paper' line, the derivations and the legend of their symbols. Every result is
    also appended to ``results`` (for a LaTeX rendering after)."""
    current: list[Result] = []
    for result in derive(chosen):
        if current and current[-1].derivation.section != result.derivation.section:
            yield text_legend(current)
            current = []
        if not current:
            yield f"# {result.derivation.section}\n"
        current.append(result)
        results.append(result)
        yield text_block(result)
    if current:
        yield text_legend(current)


_TEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                 "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                 "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
                 "|": r"\textbar{}"}


def tex_text(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_TEX_SPECIALS.get(c, c) for c in text)


def _tex_math(expr: sp.Basic) -> str:
    parts = list(expr) if isinstance(expr, sp.Tuple) else [expr]
    return "\\begin{gather*}\n" + " \\\\\n".join(sp.latex(p) for p in parts) + "\n\\end{gather*}"


def latex_document(results: list[Result]) -> str:
    """A standalone LaTeX document (article, amsmath) of the results and their symbol legends."""
    body = []
    for section, rows in by_section(results):
        body.append(f"\\section*{{{tex_text(section)}}}")
        for r in rows:
            body.append(f"\\subsection*{{{tex_text(r.derivation.title)}}}\n"
                        f"\\texttt{{{tex_text(r.derivation.name)}}}\n{_tex_math(r.expr)}")
        items = "\n".join(f"  \\item[${sp.latex(sp.Symbol(name))}$] {tex_text(meaning)}"
                          for name, meaning in used_legend(rows).items())
        if items:
            body.append(f"\\paragraph{{Symbols.}}\n\\begin{{description}}\n{items}\n"
                        "\\end{description}")
    return ("\\documentclass{article}\n\\usepackage{amsmath}\n\\allowdisplaybreaks\n"
            "\\begin{document}\n\\title{resharpen: symbolic derivations}\n\\date{}\n\\maketitle\n"
            + "\n\n".join(body) + "\n\\end{document}\n")
