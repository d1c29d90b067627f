"""The README's main job (examples/train_digits.py), run short so it stays fast:
2 CNN and 4 MLP epochs instead of the full run's 20 and 30, same code path (DataLoader, nn,
optim, the figure, the state-dict round trip, the graph picture or its note, and
the JVP check in both modes)."""
import importlib.util
import pathlib

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("tqdm")
pytest.importorskip("matplotlib")

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "train_digits.py"


def _module():
    spec = importlib.util.spec_from_file_location("train_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_train_digits_example(tmp_path, capsys):
    metrics = _module().main(["--epochs", "2", "--mlp-epochs", "4", "--out-dir",
                              str(tmp_path), "--save", str(tmp_path / "cnn.pt")])
    printed = capsys.readouterr().out
    assert "MLP: train accuracy" in printed and "CNN: train accuracy" in printed
    assert "max |forward - reversed|" in printed and "identical outputs" in printed
    assert ("graph of one training step saved" in printed
            or "graph picture: skipped" in printed)
    curves = tmp_path / "digits_curves.png"
    assert curves.stat().st_size > 1000 and curves.read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "cnn.pt").stat().st_size > 1000
    graph = tmp_path / "digits_graph.png"
    assert not graph.exists() or graph.read_bytes()[:4] == b"\x89PNG"
    # seed 0 gives 0.92 for both; the full run's CNN >= 0.98 (test_full_run_...)
    for key, floor in (("mlp", 0.88), ("cnn", 0.88)):
        assert metrics[key]["test_acc"] >= floor, (key, metrics[key]["test_acc"])
        losses = metrics[key]["losses"]
        assert sum(losses[-5:]) < 0.5 * sum(losses[:5])     # training reduced the loss
    assert metrics["jvp_max_diff"] < 1e-10


@pytest.mark.parametrize("args,message", [
    (["--seed", "-5"], "--seed must be non-negative"),
    (["--lr", "nan"], "--lr must be a positive number"),
    (["--mlp-lr", "0"], "--mlp-lr must be a positive number"),
    (["--epochs", "0"], "must be positive"),
    (["--out-dir", "/nonexistent-dir"], "does not exist"),
    (["--save", "/nonexistent-dir/cnn.pt"], "does not exist"),
])
def test_bad_options_stop_before_training(args, message, capsys):
    with pytest.raises(SystemExit) as exc:
        _module().main(args)
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert message in captured.err and "training" not in captured.out


def test_a_diverging_run_stops_with_an_error(tmp_path):
    with pytest.raises(SystemExit) as exc:
        _module().main(["--mlp-lr", "1e30", "--mlp-epochs", "1", "--models", "mlp",
                        "--out-dir", str(tmp_path)])
    message = str(exc.value.code)
    assert "loss became" in message and "smaller --mlp-lr" in message


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_full_run_meets_its_accuracy(tmp_path, seed):
    """The README's numbers: the default run (20 CNN epochs) reaches >= 0.98."""
    metrics = _module().main(["--seed", str(seed), "--models", "cnn",
                              "--out-dir", str(tmp_path)])
    assert metrics["cnn"]["test_acc"] >= 0.98, metrics["cnn"]["test_acc"]


def test_library_torch_without_torch_is_a_clear_error(monkeypatch, capsys):
    import importlib.util
    module = _module()
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(SystemExit) as exc:
        module.main(["--library", "torch"])
    assert exc.value.code == 2 and "--library torch: it is not installed" in \
        capsys.readouterr().err


def test_check_needs_distributed(capsys):
    with pytest.raises(SystemExit) as exc:
        _module().main(["--check"])
    assert exc.value.code == 2 and "add --distributed" in capsys.readouterr().err


@pytest.mark.slow
def test_distributed_run_equals_one_process(tmp_path):
    """``mpiexec -n 2 ... --distributed --check --dtype float64``: the full run on 2
    ranks ends with the parameters of a 1-process run (round-off), rank 0 alone
    prints and writes.  (The fast check of the same loop, one epoch on 2 and 3 ranks,
    is in tests/ddp/ddp_checks.py.)"""
    import subprocess
    import sys
    pytest.importorskip("mpi4py")
    mpiexec = pathlib.Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        pytest.skip("no mpiexec beside the interpreter (pip install mpich)")
    p = subprocess.run([str(mpiexec), "-n", "2", sys.executable, str(EXAMPLE),
                        "--distributed", "--check", "--dtype", "float64",
                        "--out-dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    assert out.count("digits: ") == 1 and out.count("total time") == 1, out
    assert "data-parallel over 2 processes" in out
    for name in ("MLP", "CNN"):
        line = next(s for s in out.splitlines() if s.startswith(f"check: {name}"))
        diff = float(line.split("= ")[1].split()[0])
        assert diff < 1e-10, line
    assert (tmp_path / "digits_curves.png").stat().st_size > 1000
