"""The kernel dispatcher (tensorplay/_kernels/__init__.py) and the lazy imports.

A dispatch build (TENSORPLAY_CPU_TARGET=dispatch) has kernel variants; other
builds have one, and these tests then check the same machinery with nothing to
choose from.  Speed is the benchmarks' business (benchmarks/compare_variants.py,
benchmarks/compare_import.py); nothing here is timed.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import _kernels

# Every kernel module the ops import, with inputs above the threading thresholds.
CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import tensorplay as tp
    from tensorplay import _kernels
    from tensorplay._kernels import binary, nn, reduce, unary
    rng = np.random.default_rng(0)
    out = {"selected": np.array(_kernels.SELECTED),
           "files": np.array([m.__file__ for m in (unary, binary, reduce, nn)])}
    for dt in ("float32", "float64"):
        x = tp.from_numpy(rng.standard_normal(100_000).astype(dt))
        y = tp.from_numpy(rng.uniform(0.5, 2.0, 100_000).astype(dt))
        m = tp.from_numpy(rng.standard_normal((300, 40)).astype(dt))
        for name, val in [("exp", x.exp()), ("tanh", x.tanh()), ("sigmoid", x.sigmoid()),
                          ("log", y.log()), ("sqrt", y.sqrt()), ("relu", x.relu()),
                          ("add", x + y), ("mul", x * y), ("div", x / y), ("pow", y ** x),
                          ("sum", m.sum(dim=0)), ("log_softmax", tp.log_softmax(m, 1))]:
            out[f"{name}_{dt}"] = val.numpy()
    np.savez(sys.argv[1], **out)
""")


def _numpy_reference():
    """{dtype: {op: numpy's result}} on the inputs CHILD draws, in its order."""
    rng = np.random.default_rng(0)
    refs = {}
    for dt in ("float32", "float64"):
        x = rng.standard_normal(100_000).astype(dt)
        y = rng.uniform(0.5, 2.0, 100_000).astype(dt)
        m = rng.standard_normal((300, 40)).astype(dt)
        lse = np.log(np.exp(m - m.max(1, keepdims=True)).sum(1, keepdims=True))
        refs[dt] = {"exp": np.exp(x), "tanh": np.tanh(x), "sigmoid": 1 / (1 + np.exp(-x)),
                    "log": np.log(y), "sqrt": np.sqrt(y), "relu": np.maximum(x, 0),
                    "add": x + y, "mul": x * y, "div": x / y, "pow": y ** x,
                    "sum": m.sum(0), "log_softmax": m - m.max(1, keepdims=True) - lse}
    return refs


def _run(tmp_path, dispatch, script=CHILD, check=True):
    env = dict(os.environ)
    env.pop("TENSORPLAY_DISPATCH", None)
    if dispatch is not None:
        env["TENSORPLAY_DISPATCH"] = dispatch
    path = tmp_path / f"out_{dispatch}.npz"
    proc = subprocess.run([sys.executable, "-c", script, str(path)], env=env,
                          capture_output=True, text=True, timeout=300)
    if check:
        assert proc.returncode == 0, proc.stderr
        return dict(np.load(path))
    return proc


def test_selected_variant_runs_on_this_cpu():
    names = [_kernels.BASELINE] + [v[0] for v in _kernels.VARIANTS]
    assert _kernels.SELECTED in names
    if os.environ.get("TENSORPLAY_DISPATCH"):
        return
    # the best variant this CPU supports, or the baseline when it supports none
    supported = [v[0] for v in _kernels.VARIANTS if _kernels._cpu_supports(v[2])]
    assert _kernels.SELECTED == (supported[0] if supported else _kernels.BASELINE)
    from tensorplay._kernels import unary
    folder = os.path.dirname(unary.__file__)
    base = os.path.dirname(_kernels.__file__)
    sub = dict((v[0], v[1]) for v in _kernels.VARIANTS).get(_kernels.SELECTED)
    assert folder == (os.path.join(base, sub) if sub else base)


def test_show_config_names_the_variant(capsys):
    tp.show_config()
    assert f"kernels: {_kernels.SELECTED}" in capsys.readouterr().out


@pytest.mark.skipif(os.environ.get("TENSORPLAY_DISPATCH") not in (None, ""),
                    reason="TENSORPLAY_DISPATCH set for the whole run")
def test_forced_baseline_gives_the_default_variants_numbers(tmp_path):
    default = _run(tmp_path, None)
    base = _run(tmp_path, "baseline")
    assert str(base["selected"]) == _kernels.BASELINE
    base_dir = os.path.dirname(_kernels.__file__)
    assert all(os.path.dirname(f) == base_dir for f in base["files"])
    refs = _numpy_reference()
    for dt in ("float32", "float64"):
        # libmvec is accurate to 4 ulp; its SSE, AVX2 and AVX-512 versions may differ
        tol = dict(rtol=4e-6, atol=4e-6) if dt == "float32" else dict(rtol=1e-13,
                                                                       atol=1e-13)
        for name, ref in refs[dt].items():
            key = f"{name}_{dt}"
            np.testing.assert_allclose(default[key], ref, **tol, err_msg=key)
            np.testing.assert_allclose(base[key], ref, **tol, err_msg=key)
            np.testing.assert_allclose(base[key], default[key], **tol, err_msg=key)


def test_unknown_variant_is_a_clear_error(tmp_path):
    proc = _run(tmp_path, "x86-64-v9", script="import tensorplay", check=False)
    assert proc.returncode != 0
    assert "TENSORPLAY_DISPATCH=x86-64-v9: no such kernel variant" in proc.stderr


def test_variant_the_cpu_lacks_is_refused(tmp_path):
    lacking = [v for v in _kernels.VARIANTS if not _kernels._cpu_supports(v[2])]
    if not lacking:
        pytest.skip("this build has no variant this CPU cannot run")
    proc = _run(tmp_path, lacking[0][0], script="import tensorplay", check=False)
    assert proc.returncode != 0
    assert "this CPU lacks" in proc.stderr


def test_import_is_lazy_and_submodules_still_work(tmp_path):
    script = textwrap.dedent("""
        import sys
        import tensorplay as tp
        lazy = ["numpy.random", "tensorplay.nn", "tensorplay.autograd.functional",
                "tensorplay.autograd.forward_ad", "tensorplay.autograd._gradcheck"]
        loaded = [m for m in lazy if m in sys.modules]
        assert not loaded, loaded
        assert tp.nn.functional.cross_entropy is not None
        assert tp.autograd.functional.jvp is not None
        assert tp.autograd.forward_ad.make_dual is not None
        from tensorplay.nn import functional
        from tensorplay.autograd import forward_ad
        assert "nn" in dir(tp) and "functional" in dir(tp.autograd)
        tp.manual_seed(3)
        a = tp.randn(4)
        tp.manual_seed(3)
        assert (tp.randn(4).numpy() == a.numpy()).all()
    """)
    proc = _run(tmp_path, None, script=script, check=False)
    assert proc.returncode == 0, proc.stderr
