"""DistributedSampler and DistributedDataParallel.

The sampler's partitions are compared with torch's sampler given the same
arguments (``num_replicas`` and ``rank`` explicit): exactly without shuffling; with
shuffling by their properties, since the permutation is tensorplay's stream.

DDP runs under ``mpiexec`` (scripts in tests/ddp/): few launches, many checks each,
against single-process references computed inside the script (float64 gradients
of the full batch).  Skipped with the reason when mpi4py or mpiexec is missing.
"""
import importlib.util
import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tensorplay as tp
from tensorplay.utils.data import DistributedSampler


# ---------------------------------------------------------------- DistributedSampler
CASES = [(n, r, drop) for n in (0, 1, 2, 5, 7, 12, 13) for r in (1, 2, 3, 5)
         for drop in (False, True)]


def _shares(n, replicas, drop_last, shuffle, cls=DistributedSampler, **kw):
    return [list(cls(range(n), num_replicas=replicas, rank=k, shuffle=shuffle,
                     drop_last=drop_last, **kw)) for k in range(replicas)]


@pytest.mark.parametrize("n,replicas,drop_last", CASES)
def test_unshuffled_partition_is_torchs(n, replicas, drop_last):
    torch_ds = pytest.importorskip("torch.utils.data.distributed")
    ours = _shares(n, replicas, drop_last, False)
    theirs = _shares(n, replicas, drop_last, False, cls=torch_ds.DistributedSampler)
    assert ours == theirs
    s = DistributedSampler(range(n), num_replicas=replicas, rank=0, drop_last=drop_last)
    t = torch_ds.DistributedSampler(range(n), num_replicas=replicas, rank=0,
                                    drop_last=drop_last)
    assert (len(s), s.num_samples, s.total_size) == (len(t), t.num_samples, t.total_size)


@pytest.mark.parametrize("n,replicas,drop_last", [c for c in CASES if c[0] > 0])
def test_shuffled_partition_properties(n, replicas, drop_last):
    """Interleaving the ranks' shares gives the padded (or cut) permutation:
    equal lengths, a permutation of range(n) at the head, the head repeated as
    padding (torch's scheme), nothing shared between ranks when dropping."""
    shares = _shares(n, replicas, drop_last, True, seed=3)
    size = len(shares[0])
    assert all(len(s) == size for s in shares)
    assert shares == _shares(n, replicas, drop_last, True, seed=3)   # every rank agrees
    flat = [shares[k][i] for i in range(size) for k in range(replicas)]
    if drop_last:
        assert len(set(flat)) == len(flat) == size * replicas <= n
    else:
        head = flat[:n]
        assert sorted(head) == list(range(n))
        pad = flat[n:]
        assert pad == (head * (len(pad) // n + 1))[:len(pad)]
    # the permutation is tensorplay.randperm's with seed + epoch
    perm = tp.randperm(n, generator=tp.Generator().manual_seed(3)).tolist()
    assert flat[:min(n, len(flat))] == perm[:min(n, len(flat))]


def test_set_epoch_reshuffles_and_repeats():
    s = DistributedSampler(range(100), num_replicas=2, rank=1, seed=5)
    e0 = list(s)
    assert list(s) == e0                          # same epoch, same order
    s.set_epoch(1)
    e1 = list(s)
    assert e1 != e0 and len(e1) == 50
    s.set_epoch(0)
    assert list(s) == e0
    t = DistributedSampler(range(100), num_replicas=2, rank=1, seed=6)
    assert list(t) == e1                          # seed + epoch, as torch
    assert list(DistributedSampler(range(6), num_replicas=2, rank=0, shuffle=False)) \
        == [0, 2, 4]


def test_sampler_errors_and_loader():
    torch_ds = pytest.importorskip("torch.utils.data.distributed")
    for rank in (-1, 2):
        with pytest.raises(ValueError) as ours:
            DistributedSampler(range(4), num_replicas=2, rank=rank)
        with pytest.raises(ValueError) as theirs:
            torch_ds.DistributedSampler(range(4), num_replicas=2, rank=rank)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="num_replicas must be >= 1"):
        DistributedSampler(range(4), num_replicas=0, rank=0)
    with pytest.raises(TypeError, match="rank must be an int"):
        DistributedSampler(range(4), num_replicas=2, rank=1.0)
    # in a DataLoader: the rank's share, batched
    x = tp.arange(10.0)
    loader = tp.utils.data.DataLoader(
        tp.utils.data.TensorDataset(x), batch_size=2,
        sampler=DistributedSampler(range(10), num_replicas=3, rank=2, shuffle=False))
    assert [b[0].tolist() for b in loader] == [[2.0, 5.0], [8.0, 1.0]]
    assert list(itertools.chain(*_shares(10, 3, False, False)))[-2:] == [8, 1]


# ---------------------------------------------------------------- accumulate-grad timing
def _order_log(lib):
    """Two leaves: a's gradient is complete before b's; PyTorch accumulates a (and
    runs its post-accumulate hook) before b's tensor hook runs."""
    log = []
    a = lib.tensor([2.0], dtype=lib.float64, requires_grad=True)
    b = lib.tensor([3.0], dtype=lib.float64, requires_grad=True)
    out = (((b * b) * a) ** 2).sum()
    a.register_post_accumulate_grad_hook(
        lambda t: log.append(("a_post", t.grad.item(), b.grad)))
    b.register_hook(lambda g: log.append(("b_tensor", g.item(), a.grad.item())))
    b.register_post_accumulate_grad_hook(lambda t: log.append(("b_post", t.grad.item())))
    out.backward()
    return log


def test_post_accumulate_hook_runs_during_the_pass_as_torch():
    torch = pytest.importorskip("torch")
    assert _order_log(tp) == _order_log(torch) == [
        ("a_post", 324.0, None), ("b_tensor", 432.0, 324.0), ("b_post", 432.0)]


def test_early_accumulation_respects_inputs_and_nested_grad():
    a = tp.tensor([2.0], dtype=tp.float64, requires_grad=True)
    b = tp.tensor([3.0], dtype=tp.float64, requires_grad=True)
    seen = []
    a.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.item()))
    (a * b).sum().backward(inputs=[b])            # a is not a target: untouched
    assert a.grad is None and seen == [] and b.grad.item() == 2.0
    # a grad() run from a hook inside backward() accumulates nothing into a
    inner = []
    c = tp.tensor([1.0], dtype=tp.float64, requires_grad=True)

    def nested(g):
        with tp.enable_grad():                  # hooks run with grad mode off
            inner.append(tp.autograd.grad((a * a).sum(), a)[0].item())

    c.register_hook(nested)
    (a * c * 5).sum().backward()
    assert inner == [4.0] and seen == [5.0] and a.grad.item() == 5.0
    (a * a).sum().backward(create_graph=True)     # create_graph: a differentiable sum
    assert seen == [5.0, 9.0] and a.grad.requires_grad


# ---------------------------------------------------------------- DDP under mpiexec
def _mpiexec():
    local = Path(sys.executable).parent / "mpiexec"      # the mpich wheel's launcher
    return str(local) if local.exists() else shutil.which("mpiexec")


MPIEXEC = _mpiexec()
needs_mpi = [
    pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None,
                       reason="mpi4py is not installed (pip install mpi4py mpich)"),
    pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec beside the interpreter or on "
                                               "PATH (pip install mpich)")]


def launch(script, n, *args, timeout=90, cwd=None):
    """``mpiexec -n n python script args``; returns (returncode, output)."""
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    cmd = [MPIEXEC, "-n", str(n), sys.executable, str(script), *map(str, args)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                           cwd=cwd or Path(script).parent)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{script} on {n} ranks hung past {timeout} s:\n{e.stdout}\n{e.stderr}")
    return p.returncode, p.stdout + p.stderr


@pytest.mark.parametrize("n", [2, 3])
def test_ddp_under_mpiexec(n):
    """Gradients == full-batch gradients (MLP, CNN, 1 or 4 buckets, bucket views),
    buckets started during backward, no_sync, unused parameters, buffer broadcast,
    uneven splits, mismatched models: tests/ddp/ddp_checks.py."""
    rc, out = launch(Path(__file__).parent / "ddp" / "ddp_checks.py", n, n)
    assert rc == 0, out
    assert out.count("DDP checks OK") == n, out


for _mark in needs_mpi:
    test_ddp_under_mpiexec = _mark(test_ddp_under_mpiexec)


def test_data_parallel_points_to_ddp():
    from tensorplay.nn.parallel import DataParallel
    with pytest.raises(NotImplementedError, match="DistributedDataParallel"):
        DataParallel(tp.nn.Linear(2, 2))
