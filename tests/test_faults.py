"""Regression tests for faults found by hostile testing (issue 6): each one
crashed, returned a wrong value or leaked before its fix."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tensorplay as tp


def _run(code, **env):
    return subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env),
                          capture_output=True, text=True, timeout=300)


def test_thread_count_from_the_environment_is_capped():
    # OMP_NUM_THREADS=100000 used to reach the kernels uncapped (a segfault once
    # a kernel asked libgomp for that many threads)
    r = _run("import tensorplay as tp\n"
             "x = tp.exp(tp.ones(100000))\n"
             "print(tp.get_num_threads(), float(x.sum()))", OMP_NUM_THREADS="100000")
    assert r.returncode == 0, r.stderr
    n, total = r.stdout.split()
    assert int(n) == 1024
    assert float(total) == pytest.approx(100000 * np.e)
    assert "OMP_NUM_THREADS" in r.stderr          # the warning names the variable
