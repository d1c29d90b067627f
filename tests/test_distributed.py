"""tensorplay.distributed under MPI: scripts in tests/distributed/ run under
``mpiexec -n 2`` (and ``-n 3`` for uneven splits) and check every collective against
numpy on each rank.  Skipped, with the reason, when mpi4py or mpiexec is missing
(``pip install -e ".[test]"`` installs both on Linux)."""
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "distributed"


def _mpiexec():
    # the launcher of the MPI that mpi4py was built against: the mpich wheel puts
    # it beside the interpreter; otherwise whatever is on PATH
    local = Path(sys.executable).parent / "mpiexec"
    return str(local) if local.exists() else shutil.which("mpiexec")


MPIEXEC = _mpiexec()
pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None,
                       reason="mpi4py is not installed (pip install mpi4py mpich)"),
    pytest.mark.skipif(MPIEXEC is None,
                       reason="no mpiexec found beside the interpreter or on PATH "
                              "(pip install mpich)"),
]


def launch(script, n, *args, timeout=60, env=None):
    """Run ``tests/distributed/<script>`` on ``n`` ranks; returns (returncode,
    combined output, seconds)."""
    environ = dict(os.environ, **(env or {}))
    environ.pop("OMP_NUM_THREADS", None)
    cmd = [MPIEXEC, "-n", str(n), sys.executable, str(HERE / script), *map(str, args)]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=environ, cwd=HERE)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{script} on {n} ranks hung past {timeout} s:\n{e.stdout}\n{e.stderr}")
    return p.returncode, p.stdout + p.stderr, time.monotonic() - t0


@pytest.mark.parametrize("n", [2, 3])
def test_collectives_against_numpy(n):
    rc, out, _ = launch("collectives.py", n, n)
    assert rc == 0, out
    assert out.count("checks OK") == n, out
