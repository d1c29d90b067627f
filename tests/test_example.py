"""The README's main job, run with fewer epochs so it keeps working."""
import importlib.util
import pathlib

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("tqdm")
pytest.importorskip("matplotlib")

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "train_digits.py"


def test_train_digits_example(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("train_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "loss.png"
    metrics = module.main(["--epochs", "4", "--out", str(out)])
    printed = capsys.readouterr().out
    assert "test accuracy" in printed and "max |forward - reversed|" in printed
    assert out.stat().st_size > 1000 and out.read_bytes()[:4] == b"\x89PNG"
    assert metrics["test_acc"] >= 0.9            # 4 epochs; the full run reaches >= 0.95
    assert metrics["jvp_max_diff"] < 1e-10
    first, last = metrics["losses"][:5], metrics["losses"][-5:]
    assert sum(last) < 0.5 * sum(first)          # training reduced the loss


@pytest.mark.parametrize("args,message", [
    (["--seed", "-5"], "--seed must be non-negative"),
    (["--lr", "nan"], "--lr must be a positive number"),
    (["--lr", "0"], "--lr must be a positive number"),
    (["--out", "/nonexistent-dir/x.png"], "does not exist"),
])
def test_bad_options_stop_before_training(args, message, capsys):
    spec = importlib.util.spec_from_file_location("train_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(SystemExit) as exc:
        module.main(args)
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert message in captured.err and "training" not in captured.out


def test_a_diverging_run_stops_with_an_error(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("train_digits", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(SystemExit) as exc:
        module.main(["--lr", "1e30", "--epochs", "2", "--out", str(tmp_path / "l.png")])
    assert "loss became" in str(exc.value.code) and "smaller --lr" in str(exc.value.code)
