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
