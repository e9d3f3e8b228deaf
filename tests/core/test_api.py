"""The public API re-exported from ``resharpen``: lazy, typed, and each entry works."""
import json
import subprocess
import sys

import numpy as np
import pytest

import resharpen as rs


def test_import_resharpen_loads_no_heavy_module():
    code = "import sys, resharpen; print(sorted(m for m in ('torch', 'sympy', 'scipy', 'matplotlib') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_public_name_resolves():
    for name in rs.__all__:
        assert getattr(rs, name) is not None, name
    with pytest.raises(AttributeError):
        rs.no_such_function  # noqa: B018


def test_build_evaluate_and_theory_margins_agree():
    import torch

    built = rs.build("tight", vocab=8, norm="none", lam=16.0)
    rows = rs.evaluate_lengths(built.model, vocab=8)
    assert [row["length"] for row in rows] == list(range(1, 8))
    tokens = torch.tensor([[0, 1, 2]])
    nonquery, query = rs.theory_margins(built, tokens)
    assert np.isfinite(nonquery).all() and np.isfinite(query).all()


def test_load_run_reads_a_run_folder_and_names_a_missing_file(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    for name, value in (("config.json", {"name": "x"}), ("per_length.json", []),
                        ("summary.json", {"loss": 1.0})):
        (folder / name).write_text(json.dumps(value))
    (folder / "metrics.jsonl").write_text('{"step": 0}\n{"step": 1}\n')
    run = rs.load_run(folder)
    assert run.config == {"name": "x"} and [r["step"] for r in run.history] == [0, 1]
    (folder / "summary.json").unlink()
    with pytest.raises(ValueError, match="summary.json"):
        rs.load_run(folder)


def test_run_claim_by_id_and_unknown_id():
    assert rs.run_claim("sc.metrics.closed_forms").status == "PASS"
    with pytest.raises(ValueError, match="no claim"):
        rs.run_claim("sc.no_such_claim")


# ----------------------------------------------------------------------------- docs/api.md
ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
API_DOC = ROOT / "docs" / "api.md"
START, END = "<!-- api-reference:start -->", "<!-- api-reference:end -->"


def _signature(obj) -> str:
    """``(name: hint = default, ...) -> hint`` with the hints as written in the source."""
    import inspect

    def hint(annotation) -> str:
        return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)

    signature = inspect.signature(obj)
    params, star = [], False
    for p in signature.parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            params.append("*")
            star = True
        text = ("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else "") + p.name
        star = star or p.kind is p.VAR_POSITIONAL
        if p.annotation is not p.empty:
            text += f": {hint(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {p.default!r}" if not callable(p.default) else " = ..."
        params.append(text)
    returns = signature.return_annotation
    return f"({', '.join(params)})" + ("" if returns is signature.empty else f" -> {hint(returns)}")


def reference() -> str:
    """The reference part of docs/api.md, generated from the public names' signatures and
    docstrings: one section per name in ``resharpen.__all__`` (documented methods of classes
    under it), each docstring verbatim in a <pre> block."""
    import html
    import inspect

    parts = []
    for name in rs.__all__:
        obj = getattr(rs, name)
        if not callable(obj):  # a constant: its value's shape and CONSTANT_DOCS
            module = _constant_module(name)
            shown = (f"dict {{{', '.join(map(str, obj))}}} -> "
                     f"{type(next(iter(obj.values()))).__name__}" if isinstance(obj, dict)
                     else repr(obj))
            parts.append(f"### `resharpen.{name}`\n\nconstant `{name}`, from `{module}`\n\n"
                         f"<pre>\n{name} = {html.escape(shown, quote=False)}\n\n"
                         f"{html.escape(rs.CONSTANT_DOCS[name], quote=False)}\n</pre>\n")
            continue
        kind = "class" if inspect.isclass(obj) else "function"
        parts.append(f"### `resharpen.{name}`\n\n{kind} `{name}{_signature(obj)}`, from "
                     f"`{obj.__module__}`\n\n<pre>\n{html.escape(inspect.getdoc(obj), quote=False)}\n</pre>\n")
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_") or not (inspect.isfunction(member)
                                                or isinstance(member, property)):
                    continue
                doc = inspect.getdoc(member)
                if not doc:
                    continue
                if isinstance(member, property):
                    head = f"property `{name}.{attr}`"
                else:
                    head = f"method `{name}.{attr}{_signature(member)}`"
                parts.append(f"{head}\n\n<pre>\n{html.escape(doc, quote=False)}\n</pre>\n")
    return "\n".join(parts)


def _constant_module(name: str) -> str:
    from resharpen import _API

    return _API[name][0]


def test_every_public_name_has_a_docstring_and_type_hints():
    import inspect

    for name in rs.__all__:
        obj = getattr(rs, name)
        if not callable(obj):
            assert rs.CONSTANT_DOCS.get(name, "").strip(), f"resharpen.{name} is not described"
            continue
        assert (inspect.getdoc(obj) or "").strip(), f"resharpen.{name} has no docstring"
        if inspect.isclass(obj):
            continue
        signature = inspect.signature(obj)
        missing = [p for p, param in signature.parameters.items()
                   if param.annotation is inspect.Parameter.empty]
        assert not missing, f"resharpen.{name}: parameters without a type hint: {missing}"
        assert signature.return_annotation is not inspect.Signature.empty, name


def test_docs_api_md_is_generated_from_the_docstrings():
    text = API_DOC.read_text()
    for name in rs.__all__:
        assert f"### `resharpen.{name}`" in text, f"docs/api.md does not document {name}"
    assert START in text and END in text
    current = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert current == reference().strip(), (
        "docs/api.md is out of date with the docstrings; regenerate its reference with "
        "`.venv/bin/python tests/core/test_api.py --write`")


def test_train_from_a_mapping_saves_and_returns_the_run(tmp_path):
    run = rs.train({"task": {"vocab": 6}, "model": {"d_model": 6},
                    "train": {"steps": 5, "warmup": 1}, "eval": {"per_length": 4}},
                   ["train.lr=0.01"], out=tmp_path / "run")
    assert run.config["train"]["lr"] == 0.01 and run.config["name"] == "run"
    assert (tmp_path / "run" / "summary.json").is_file() and run.model("raw").cfg.vocab == 6
    with pytest.raises(ValueError, match="unknown key"):
        rs.train({"task": {"vocabulary": 6}}, out=tmp_path / "bad")
    with pytest.raises(TypeError, match="config must be"):
        rs.train(42, out=tmp_path / "bad")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/core/test_api.py --write  (regenerates the "
                         "reference part of docs/api.md from the docstrings)")
    head, rest = API_DOC.read_text().split(START, 1)
    API_DOC.write_text(f"{head}{START}\n\n{reference().strip()}\n\n{END}{rest.split(END, 1)[1]}")
    print(f"wrote {API_DOC}")
