"""DistributedSampler and DistributedDataParallel.

The sampler's partitions are compared with torch's sampler given the same
arguments (``num_replicas`` and ``rank`` explicit): exactly without shuffling; with
shuffling by their properties, since the permutation is tensorplay's stream.

DDP runs under ``mpiexec`` (scripts in tests/ddp/): few launches, many checks each,
against single-process references computed inside the script (float64 gradients
of the full batch).  Skipped with the reason when mpi4py or mpiexec is missing.
"""
import itertools

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
