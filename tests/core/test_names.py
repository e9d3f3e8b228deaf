"""One safe-name rule: a config's name cannot leave the output folder."""
import pytest

from resharpen.cli import main
from resharpen.experiments.common.names import MAX_LENGTH, check_name


@pytest.mark.parametrize("name", ["../../../x", "/tmp/x", "a/b", "..", ".hidden", "", "x" * (MAX_LENGTH + 1),
                                  "tab\there", "new\nline"])
def test_unsafe_names_are_refused(name):
    with pytest.raises(ValueError):
        check_name(name)


@pytest.mark.parametrize("name", ["base", "long_runs_v32-quick", "lr=1e-3", "a.b", "placements-0007"])
def test_safe_names_pass(name):
    assert check_name(name) == name


def test_non_string_names_say_what_was_expected():
    with pytest.raises(ValueError, match="must be a string, got int"):
        check_name(5, "name")


@pytest.mark.parametrize("bad", ['"../../../escape"', '"/tmp/escape"', "5"])
def test_train_refuses_an_escaping_name_before_writing(tmp_path, monkeypatch, capsys, bad):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "c.toml"
    config.write_text(f"name = {bad}\n[task]\nvocab = 8\n[train]\nsteps = 1\nwarmup = 0\n")
    assert main(["train", str(config)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "name" in err and len(err.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml"]
    assert not (tmp_path.parent / "escape").exists()
