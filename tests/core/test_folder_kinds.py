"""A folder's kind is read from the files its writer leaves, in either form (plain or the
archive's .gz); only a folder of another kind is refused."""
from __future__ import annotations

import pytest

from resharpen.experiments.common.folder_kinds import check_kind, held_kinds


def test_each_kind_is_read_from_its_files_in_either_form(tmp_path):
    for name, kind in (("summary.json", "run"), ("metrics.jsonl.gz", "run"),
                       ("report.json", "construction"), ("sweep.json.gz", "sweep"),
                       ("table.jsonl", "sweep"), ("battery_plan.json", "battery")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / name).write_text("{}")
        assert held_kinds(folder) == {kind: name.removesuffix(".gz")}
        check_kind(folder, kind)  # its own kind passes
        other = "sweep" if kind != "sweep" else "run"
        with pytest.raises(ValueError, match="holds .* not "):
            check_kind(folder, other, "--out")


def test_an_absent_an_empty_and_a_foreign_folder_pass(tmp_path):
    check_kind(tmp_path / "absent", "run")
    check_kind(tmp_path, "construction")
    (tmp_path / "notes.txt").write_text("mine")
    check_kind(tmp_path, "sweep")
    with pytest.raises(ValueError, match="unknown folder kind"):
        check_kind(tmp_path, "weights")
