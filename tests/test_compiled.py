"""The compiled hot-path modules (setup.py's TENSORPLAY_COMPILE_PY block) and their
fallback to source (tensorplay/_compiled.py)."""
import os
import subprocess
import sys

from tensorplay import _compiled


def _run(code, **env):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, **env}, check=True)
    return out.stdout.strip(), out.stderr


def test_pure_python_switch_loads_every_module_from_source():
    code = ("import tensorplay, tensorplay._compiled as c, tensorplay.autograd.graph as g;"
            "print(c.compiled_modules(), g.__file__.endswith('.py'))")
    out, _ = _run(code, TENSORPLAY_PURE_PYTHON="1")
    assert out == "[] True"


def test_source_finder_loads_the_py_file():
    spec = _compiled._SourceFinder({"tensorplay.autograd.graph"}).find_spec(
        "tensorplay.autograd.graph")
    assert spec.origin.endswith(os.path.join("autograd", "graph.py"))
    assert _compiled._SourceFinder(set()).find_spec("tensorplay.autograd.graph") is None


def test_checksum_changes_with_content(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("x = 1\n")
    a = _compiled.checksum(p)
    p.write_text("x = 2\n")
    assert _compiled.checksum(p) != a


def test_a_changed_tensor_source_also_sends_its_dependents_to_source():
    # Editing _tensor.py without a rebuild: the compiled graph and registry
    # cimport its extension type, so they must run from source too (they used to
    # fail the import with "partially initialized module").
    code = (
        "import importlib.util, runpy, sys, types\n"
        "pkg = importlib.util.find_spec('tensorplay').submodule_search_locations[0]\n"
        "try:\n"
        "    real = runpy.run_path(pkg + '/_compiled_sources.py')['SOURCES']\n"
        "except (FileNotFoundError, OSError):\n"
        "    print('not built'); sys.exit()\n"
        "fake = types.ModuleType('tensorplay._compiled_sources')\n"
        "fake.SOURCES = dict(real, **{'tensorplay._tensor': 'stale'})\n"
        "sys.modules['tensorplay._compiled_sources'] = fake\n"
        "import warnings; warnings.simplefilter('ignore')\n"
        "import tensorplay as tp, tensorplay._compiled as c\n"
        "x = tp.ones(3, requires_grad=True); (x * x).sum().backward()\n"
        "print(sorted(c._from_source), x.grad.tolist())\n")
    out, _ = _run(code, TENSORPLAY_PURE_PYTHON="0")
    if out == "not built":
        import pytest
        pytest.skip("built without compiled modules")
    assert out == ("['tensorplay._ops.registry', 'tensorplay._tensor', "
                   "'tensorplay.autograd.graph'] [2.0, 2.0, 2.0]")
