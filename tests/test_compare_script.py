"""benchmarks/compare.py keeps running: every row once on small inputs, one fresh
worker process (the script run as a script) beside a busy one, the busy
process gone afterwards.  Nothing
here asserts a time (speed is shown by the benchmark, never by a test)."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from benchmarks import compare, harness  # noqa: E402

ROW_NAMES = ["tiny chain", "exp", "tanh", "sigmoid", "add", "mul", "sum()", "sum(dim=0)",
             "matmul", "MLP step", "jvp fwd", "jvp rev", "hvp"]


def _run(capsys, *flags):
    results = compare.main(["--selftest", "--no-fresh", *flags])
    return results, capsys.readouterr().out


def test_selftest_without_torch_prints_numpy_columns(capsys):
    results, out = _run(capsys, "--no-torch")
    assert [r.op for r in results if r.op != "matmul"] == [n for n in ROW_NAMES
                                                            if n != "matmul"]
    assert sum(r.op == "matmul" for r in results) == 4
    exp = next(r for r in results if r.op == "exp")
    assert set(exp.times) == {"tp", "numpy"} and exp.ratio("numpy") > 0
    assert exp.ratio("torch") is None
    assert "copy bandwidth" in out and "tp/numpy" in out and "torch not used" in out
    hvp = next(r for r in results if r.op == "hvp")
    assert hvp.times or "skipped" in hvp.notes[0]


def test_selftest_with_torch_has_ratios(capsys):
    pytest.importorskip("torch")
    results, out = _run(capsys)
    for r in results:
        if r.times:
            assert "torch" in r.times and r.ratio("torch") > 0, r.op
    assert "tp jvp fwd / tp forward pass" in out


def test_hvp_row_runs_once_tensorplay_has_hvp(monkeypatch):
    # a stand-in with torch's signature until tensorplay.autograd.functional.hvp exists
    import tensorplay as tp
    monkeypatch.setattr(tp.autograd.functional, "hvp",
                        lambda func, inputs, v: (func(*inputs), v), raising=False)
    op, _, build, _ = compare._hvp_row()
    cands, _ = build({"tp": tp})
    loss, hv = cands["tp"]()
    assert op == "hvp" and loss.shape == () and len(hv) == 4


def test_fresh_worker_beside_a_busy_process():
    (mlp, jvp) = compare.run_fresh(["tp"], 1, compare.SETTINGS["selftest"]["fresh"],
                                   loads=(True,))
    assert mlp.op == "fresh MLP step" and mlp.size == "busy beside"
    assert len(mlp.times["tp"]) == 1 and mlp.times["tp"][0] > 0
    assert jvp.op == "fresh jvp fwd" and jvp.times["tp"][0] > 0


def test_busy_process_is_killed_even_on_error():
    with pytest.raises(KeyboardInterrupt):
        with harness.busy_process() as proc:
            assert proc.poll() is None           # spinning
            raise KeyboardInterrupt
    assert proc.poll() is not None


def test_help(capsys):
    with pytest.raises(SystemExit) as exc:
        compare.main(["--help"])
    assert exc.value.code == 0 and "--quick" in capsys.readouterr().out
