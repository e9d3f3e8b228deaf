"""A resumed sweep removes only the temporary files this package wrote, where it wrote them."""
import json

from resharpen.experiments.common import io
from resharpen.experiments.training import sweep


def test_cleanup_spares_foreign_files(tmp_path):
    root = tmp_path / "sweep"
    run = root / "runs" / "r0"
    run.mkdir(parents=True)
    ours = [root / ".table.csv.resharpen-abc.tmp", run / ".summary.json.resharpen-x1.tmp",
            run / ".weights_raw.safetensors.resharpen-y.tmp"]
    foreign = [root / ".swap.tmp", root / ".table.csv.abc.tmp", run / ".notes.txt.resharpen-x.tmp",
               root / "runs" / ".summary.json.resharpen-z.tmp", tmp_path / ".sweep.json.resharpen-q.tmp",
               root / "deep" / "down" / ".summary.json.resharpen-w.tmp", run / "my_notes.tmp"]
    for path in ours + foreign:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    identity = {"name": "t"}
    configs = [{"name": "r0"}]

    def run_fn(batch):
        return [{"config": c, "history": [], "summary": {"ok": True}} for c in batch]

    sweep.execute(root, identity, configs, run_fn, lambda: None, backend="local", workers=1,
                  progress=False)
    assert not any(p.exists() for p in ours)
    assert all(p.exists() for p in foreign)
    assert json.loads((run / "summary.json").read_text()) == {"ok": True}


def test_atomic_writes_use_the_package_mark(tmp_path, monkeypatch):
    seen = []
    real = io.tempfile.mkstemp

    def spy(**kwargs):
        seen.append(kwargs["prefix"])
        return real(**kwargs)

    monkeypatch.setattr(io.tempfile, "mkstemp", spy)
    io.atomic_write_text(tmp_path / "a.json", "{}")
    assert seen == [".a.json.resharpen-"]
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]
