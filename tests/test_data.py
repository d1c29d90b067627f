"""tensorplay.utils.data: datasets, samplers, DataLoader and default_collate.

References: closed forms (batch counts, partitions, index coverage), numpy for the
values, and torch's own classes when installed (collated structure and dtypes,
lengths, error types and messages).
"""
import collections
import math
import warnings

import numpy as np
import pytest

import tensorplay as tp
from tensorplay.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader,
                                   Dataset, IterableDataset, RandomSampler,
                                   SequentialSampler, Subset, SubsetRandomSampler,
                                   TensorDataset, WeightedRandomSampler, default_collate,
                                   default_convert, get_worker_info, random_split)

Point = collections.namedtuple("Point", "x y")


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i

    def __len__(self):
        return self.n


class Stream(IterableDataset):
    def __init__(self, n, sized=True):
        self.n, self.sized = n, sized

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        if not self.sized:
            raise TypeError("no len")
        return self.n


def _flat(batches):
    return [v for b in batches for v in b.tolist()]


# ---------------------------------------------------------------- datasets
def test_tensor_dataset_indexes_every_tensor_along_dim_0():
    x, y = tp.arange(12.0).reshape(6, 2), tp.arange(6)
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    xi, yi = ds[4]
    assert xi.tolist() == [8.0, 9.0] and yi.item() == 4
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, tp.arange(5))
    with pytest.raises(TypeError, match="must be a Tensor"):
        TensorDataset(x, np.arange(6))
    with pytest.raises(ValueError, match="at least one tensor"):
        TensorDataset()
    with pytest.raises(IndexError, match="0-d"):
        TensorDataset(tp.tensor(1.0))


def test_subset_concat_and_chain():
    sq = Squares(5)
    sub = Subset(sq, [4, 0, 2])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [16, 0, 4]
    assert sub.__getitems__([2, 0]) == [4, 16]
    cat = ConcatDataset([Squares(2), Squares(3)])
    assert len(cat) == 5 and cat.cumulative_sizes == [2, 5]
    assert [cat[i] for i in range(5)] == [0, 1, 0, 1, 4] and cat[-1] == 4 and cat[-5] == 0
    assert len(Squares(2) + Squares(4)) == 6
    with pytest.raises(ValueError, match="absolute value of index"):
        cat[-6]
    with pytest.raises(IndexError, match="out of range"):
        cat[5]
    with pytest.raises(AssertionError, match="empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([Squares(2), Stream(2)])
    chain = Stream(2) + Stream(3)
    assert isinstance(chain, ChainDataset) and list(chain) == [0, 1, 0, 1, 2]
    assert len(chain) == 5
    with pytest.raises(NotImplementedError):
        Dataset()[0]
    with pytest.raises(NotImplementedError):
        iter(IterableDataset())


def test_random_split_partitions_with_integer_lengths():
    parts = random_split(range(10), [3, 7], generator=tp.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    values = sorted(p[i] for p in parts for i in range(len(p)))
    assert values == list(range(10))
    again = random_split(range(10), [3, 7], generator=tp.Generator().manual_seed(0))
    assert [list(p.indices) for p in parts] == [list(p.indices) for p in again]
    np.testing.assert_array_equal(                  # one randperm of the whole range
        parts[0].indices + parts[1].indices,
        tp.randperm(10, generator=tp.Generator().manual_seed(0)).tolist())


@pytest.mark.parametrize("n,fracs", [(10, [0.3, 0.7]), (11, [0.5, 0.5]),
                                     (7, [0.2, 0.2, 0.6]), (5, [1 / 3, 1 / 3, 1 / 3])])
def test_random_split_fractions_follow_pytorchs_rounding(n, fracs):
    sizes = [int(math.floor(n * f)) for f in fracs]
    for i in range(n - sum(sizes)):                 # PyTorch: round-robin remainder
        sizes[i % len(sizes)] += 1
    parts = random_split(range(n), fracs)
    assert [len(p) for p in parts] == sizes
    assert sorted(i for p in parts for i in p.indices) == list(range(n))


def test_random_split_fractions_match_torch():
    torch = pytest.importorskip("torch")
    for n, fracs in [(10, [0.3, 0.7]), (11, [0.5, 0.5]), (7, [0.2, 0.2, 0.6]),
                     (4, [0.1, 0.1, 0.8])]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = [len(p) for p in random_split(range(n), fracs)]
            theirs = [len(p) for p in torch.utils.data.random_split(range(n), fracs)]
        assert ours == theirs


def test_random_split_errors_and_warning():
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        random_split(range(10), [0.5, 1.5, -1.0])
    with pytest.raises(ValueError, match="non-negative int"):
        random_split(range(10), [11, -1])
    with pytest.raises(TypeError, match="lengths"):
        random_split(range(10), ["5", "5"])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(2), [0.9, 0.1])


def test_random_split_uses_the_default_generator_under_manual_seed():
    tp.manual_seed(4)
    a = [p.indices for p in random_split(range(20), [5, 15])]
    tp.manual_seed(4)
    assert a == [p.indices for p in random_split(range(20), [5, 15])]


# ---------------------------------------------------------------- samplers
def test_sequential_and_batch_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    bs = BatchSampler(SequentialSampler(range(10)), 3, drop_last=False)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]] and len(bs) == 4
    bs = BatchSampler(SequentialSampler(range(10)), 3, drop_last=True)
    assert list(bs) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]] and len(bs) == 3
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="batch_size should be a positive integer"):
            BatchSampler(range(3), bad, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean"):
        BatchSampler(range(3), 2, 1)


def test_random_sampler_permutes_and_repeats_under_a_seed():
    s = RandomSampler(range(50), generator=tp.Generator().manual_seed(3))
    first, second = list(s), list(s)
    assert sorted(first) == list(range(50)) == sorted(second) and first != second
    assert len(s) == 50
    s2 = RandomSampler(range(50), generator=tp.Generator().manual_seed(3))
    assert list(s2) == first
    tp.manual_seed(8)
    a = list(RandomSampler(range(30)))
    tp.manual_seed(8)
    assert list(RandomSampler(range(30))) == a


def test_random_sampler_num_samples_and_replacement():
    s = RandomSampler(range(4), num_samples=10)            # 2 permutations + 2 more
    idx = list(s)
    assert len(idx) == 10 == len(s)
    assert sorted(idx[:4]) == sorted(idx[4:8]) == [0, 1, 2, 3]
    assert len(set(idx[8:])) == 2
    r = list(RandomSampler(range(3), replacement=True, num_samples=70,
                           generator=tp.Generator().manual_seed(1)))
    assert len(r) == 70 and set(r) == {0, 1, 2}
    counts = np.bincount(list(RandomSampler(range(4), replacement=True, num_samples=20_000)),
                         minlength=4)
    np.testing.assert_allclose(counts / 20_000, 0.25, atol=0.02)


def test_random_sampler_errors_match_torch():
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)
    for bad in (0, -2, 1.5):
        with pytest.raises(ValueError, match="num_samples should be a positive integer"):
            RandomSampler(range(3), num_samples=bad)
    with pytest.raises(ValueError, match="num_samples=0"):
        RandomSampler([])
    with pytest.raises(TypeError, match="generator"):
        RandomSampler(range(3), generator=np.random.default_rng(0))


def test_subset_random_sampler_and_weighted_sampler():
    s = SubsetRandomSampler([10, 20, 30, 40], generator=tp.Generator().manual_seed(0))
    assert sorted(s) == [10, 20, 30, 40] and len(s) == 4
    w = WeightedRandomSampler([1.0, 0.0, 3.0], 40_000,
                              generator=tp.Generator().manual_seed(0))
    counts = np.bincount(list(w), minlength=3) / 40_000
    np.testing.assert_allclose(counts, [0.25, 0.0, 0.75], atol=0.01)
    assert len(w) == 40_000 and w.weights.dtype is tp.float64
    no_rep = list(WeightedRandomSampler([1, 1, 1, 1], 4, replacement=False))
    assert sorted(no_rep) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="replacement should be a boolean"):
        WeightedRandomSampler([1.0], 1, replacement=None)
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0, 2.0]], 1)


# ---------------------------------------------------------------- default_collate
def test_collate_stacks_tensors_and_converts_numbers_with_pytorchs_dtypes():
    b = default_collate([tp.tensor([1.0, 2.0]), tp.tensor([3.0, 4.0])])
    assert b.shape == (2, 2) and b.dtype is tp.float32
    f = default_collate([1.5, 2.5])
    assert f.dtype is tp.float64 and f.tolist() == [1.5, 2.5]
    i = default_collate([1, 2, 3])
    assert i.dtype is tp.int64 and i.tolist() == [1, 2, 3]
    assert default_collate([True, False]).dtype is tp.bool
    assert default_collate(["a", "b"]) == ["a", "b"]
    a = default_collate([np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32)])
    assert isinstance(a, tp.Tensor) and a.shape == (2, 2, 3) and a.dtype is tp.float32
    s = default_collate([np.float32(1), np.float32(2)])
    assert s.dtype is tp.float32 and s.shape == (2,)
    assert default_collate([np.int64(1), np.int64(2)]).dtype is tp.int64


def test_collate_transposes_tuples_and_keeps_dicts_and_namedtuples():
    batch = [(tp.tensor([float(k)]), k, {"id": k, "name": f"s{k}"}) for k in range(3)]
    x, y, d = out = default_collate(batch)
    assert isinstance(out, list)                       # tuples become lists (PyTorch)
    assert x.shape == (3, 1) and y.tolist() == [0, 1, 2]
    assert d["id"].tolist() == [0, 1, 2] and d["name"] == ["s0", "s1", "s2"]
    p = default_collate([Point(1.0, 2), Point(3.0, 4)])
    assert type(p) is Point and p.x.dtype is tp.float64 and p.y.tolist() == [2, 4]
    lists = default_collate([[1, 2], [3, 4]])
    assert isinstance(lists, list) and [t.tolist() for t in lists] == [[1, 3], [2, 4]]


def test_collate_errors():
    with pytest.raises(RuntimeError):
        default_collate([tp.zeros(2), tp.zeros(3)])
    with pytest.raises(RuntimeError):
        default_collate([np.zeros(2), np.zeros(3)])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays, numbers"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="batch must contain"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(KeyError):
        default_collate([{"a": 1}, {"b": 2}])


def _structure(obj, torch):
    """A comparable summary of a collated batch: types, shapes, dtypes, values."""
    if isinstance(obj, (tp.Tensor, torch.Tensor)):
        return ("tensor", tuple(obj.shape), str(obj.dtype).split(".")[-1],
                np.asarray(obj.tolist()).tolist())
    if isinstance(obj, dict):
        return ("dict", {k: _structure(v, torch) for k, v in obj.items()})
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return (type(obj).__name__, [_structure(v, torch) for v in obj])
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [_structure(v, torch) for v in obj])
    return ("other", obj)


def test_collate_matches_torch_default_collate():
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate
    cases = [
        [1.0, 2.0], [1, 2], [True, False], ["a", "b"], [b"x", b"y"],
        [np.float32(1.0), np.float32(2.0)], [np.int32(3), np.int32(4)], [np.float64(1.5)],
        [np.arange(6.0).reshape(2, 3), np.ones((2, 3))],
        [np.arange(3, dtype=np.int64), np.arange(3, dtype=np.int64)],
        [(1, 2.0, "s"), (3, 4.0, "t")],
        [[1, 2], [3, 4]],
        [{"a": 1, "b": [1.0, 2.0]}, {"a": 2, "b": [3.0, 4.0]}],
        [Point(1, 2.0), Point(3, 4.0)],
        [(np.zeros(2, np.float32), {"k": (1, "u")}), (np.ones(2, np.float32), {"k": (2, "v")})],
    ]
    for batch in cases:
        assert _structure(default_collate(batch), torch) == \
            _structure(torch_collate(batch), torch), batch
    tensors = [[tp.arange(4.0).reshape(2, 2), tp.ones(2, 2)], [tp.arange(3), tp.arange(3)]]
    for batch in tensors:
        tb = [torch.tensor(t.numpy()) for t in batch]
        assert _structure(default_collate(batch), torch) == _structure(torch_collate(tb), torch)


def test_default_convert_converts_numpy_without_batching():
    out = default_convert({"a": np.zeros(2), "b": (np.int64(3), "s")})
    assert isinstance(out["a"], tp.Tensor) and out["a"].dtype is tp.float64
    assert isinstance(out["b"], list) and out["b"][0].item() == 3 and out["b"][1] == "s"
    strs = np.array(["a"])
    assert default_convert(strs) is strs


# ---------------------------------------------------------------- DataLoader
@pytest.mark.parametrize("n,bs,drop_last", [(10, 3, False), (10, 3, True), (9, 3, False),
                                            (9, 3, True), (2, 5, False), (2, 5, True)])
@pytest.mark.parametrize("shuffle", [False, True])
def test_batches_cover_the_dataset_exactly_once(n, bs, drop_last, shuffle):
    ds = TensorDataset(tp.arange(n))
    loader = DataLoader(ds, batch_size=bs, shuffle=shuffle, drop_last=drop_last)
    batches = [b for (b,) in loader]
    full = n // bs if drop_last else math.ceil(n / bs)
    assert len(loader) == full == len(batches)
    sizes = [len(b) for b in batches]
    assert all(s == bs for s in sizes[:n // bs])
    seen = _flat(batches)
    assert len(seen) == len(set(seen)) == (n // bs * bs if drop_last else n)
    if not shuffle:
        assert seen == list(range(len(seen)))


def test_shuffled_order_is_seeded_and_changes_per_epoch():
    ds = TensorDataset(tp.arange(40))
    loader = DataLoader(ds, batch_size=8, shuffle=True,
                        generator=tp.Generator().manual_seed(0))
    e1, e2 = _flat(b for (b,) in loader), _flat(b for (b,) in loader)
    assert sorted(e1) == sorted(e2) == list(range(40)) and e1 != e2
    again = DataLoader(ds, batch_size=8, shuffle=True, generator=tp.Generator().manual_seed(0))
    assert _flat(b for (b,) in again) == e1
    tp.manual_seed(1)
    d1 = _flat(b for (b,) in DataLoader(ds, batch_size=8, shuffle=True))
    tp.manual_seed(1)
    assert _flat(b for (b,) in DataLoader(ds, batch_size=8, shuffle=True)) == d1


def test_loader_collates_tuples_of_tensors_as_a_training_loop_wants():
    x = tp.randn(10, 3)
    y = tp.arange(10)
    xb, yb = next(iter(DataLoader(TensorDataset(x, y), batch_size=4)))
    assert xb.shape == (4, 3) and yb.dtype is tp.int64
    np.testing.assert_array_equal(xb.numpy(), x.numpy()[:4])


def test_loader_with_sampler_batch_sampler_and_collate_fn():
    ds = Squares(6)
    out = list(DataLoader(ds, sampler=[5, 0, 3], batch_size=2))
    assert [b.tolist() for b in out] == [[25, 0], [9]]
    out = list(DataLoader(ds, batch_sampler=[[1, 2], [4]]))
    assert [b.tolist() for b in out] == [[1, 4], [16]]
    out = list(DataLoader(ds, batch_size=4, collate_fn=lambda b: sum(b)))
    assert out == [0 + 1 + 4 + 9, 16 + 25]
    unbatched = list(DataLoader(ds, batch_size=None))
    assert unbatched == [0, 1, 4, 9, 16, 25]
    arrays = list(DataLoader([np.zeros(2)], batch_size=None))
    assert isinstance(arrays[0], tp.Tensor) and arrays[0].shape == (2,)
    loader = DataLoader(ds, batch_size=4)
    it = iter(loader)
    assert len(it) == 2 and iter(it) is it


def test_loader_over_an_iterable_dataset():
    loader = DataLoader(Stream(7), batch_size=3)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]] and len(loader) == 3
    loader = DataLoader(Stream(7), batch_size=3, drop_last=True)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5]] and len(loader) == 2
    assert [b.tolist() for b in DataLoader(Stream(6), batch_size=3)] == [[0, 1, 2], [3, 4, 5]]
    assert list(DataLoader(Stream(2), batch_size=None)) == [0, 1]
    with pytest.raises(TypeError):
        len(DataLoader(Stream(3, sized=False)))
    assert [b.tolist() for b in DataLoader(Stream(3, sized=False), batch_size=2)] == \
        [[0, 1], [2]]


def test_loader_mutual_exclusions_and_bad_options_match_torch():
    ds = Squares(4)
    cases = [
        (dict(sampler=[0, 1], shuffle=True), ValueError,
         "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), ValueError,
         "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
         "and drop_last"),
        (dict(batch_sampler=[[0]], shuffle=True), ValueError, "mutually exclusive"),
        (dict(batch_sampler=[[0]], sampler=[0]), ValueError, "mutually exclusive"),
        (dict(batch_sampler=[[0]], drop_last=True), ValueError, "mutually exclusive"),
        (dict(batch_size=None, drop_last=True), ValueError,
         "batch_size=None option disables auto-batching and is mutually exclusive with "
         "drop_last"),
        (dict(batch_size=0), ValueError, "batch_size should be a positive integer value"),
        (dict(num_workers=-1), ValueError, "num_workers option should be non-negative"),
        (dict(timeout=-1), ValueError, "timeout option should be non-negative"),
        (dict(prefetch_factor=2), ValueError, "prefetch_factor option could only be"),
        (dict(persistent_workers=True), ValueError, "persistent_workers option needs"),
    ]
    torch = None
    try:
        import torch
    except ImportError:
        pass
    for kw, exc, msg in cases:
        with pytest.raises(exc, match=msg.replace("(", r"\(")):
            DataLoader(ds, **kw)
        if torch is not None:
            with pytest.raises(exc, match=msg.replace("(", r"\(")):
                torch.utils.data.DataLoader(list(range(4)), **kw)
    for kw in (dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])):
        with pytest.raises(ValueError, match="DataLoader with IterableDataset: expected "
                                             "unspecified"):
            DataLoader(Stream(3), **kw)
    with pytest.raises(NotImplementedError, match="num_workers=2"):
        DataLoader(ds, num_workers=2)
    loader = DataLoader(ds, batch_size=2)
    for attr in ("batch_size", "sampler", "batch_sampler", "drop_last", "dataset"):
        with pytest.raises(ValueError, match=f"{attr} attribute should not be set after"):
            setattr(loader, attr, None)
    assert loader.batch_size == 2
    loader.collate_fn = default_collate                 # other attributes may change
    assert get_worker_info() is None


def test_loader_lengths_match_torch():
    torch = pytest.importorskip("torch")
    for n, bs, drop in [(10, 3, False), (10, 3, True), (1, 4, False), (0, 2, False)]:
        ours = DataLoader(list(range(n)), batch_size=bs, drop_last=drop)
        theirs = torch.utils.data.DataLoader(list(range(n)), batch_size=bs, drop_last=drop)
        assert len(ours) == len(theirs) == len(list(ours)) == len(list(theirs))


def test_utils_data_is_reachable_from_the_top_level():
    assert tp.utils.data.DataLoader is DataLoader


def test_tensor_dataset_fast_gather_gives_the_collated_batches():
    x = tp.randn(23, 2, 3)
    y = tp.arange(23)
    ds = TensorDataset(x, y)

    class Plain(TensorDataset):                 # a subclass takes the general path
        pass

    for kw in (dict(batch_size=5), dict(batch_size=4, drop_last=True),
               dict(sampler=[np.int64(3), np.int64(0)], batch_size=2),   # numpy ints
               dict(batch_sampler=[[22, -1, 0]])):
        fast = list(DataLoader(ds, **kw))
        slow = list(DataLoader(Plain(x, y), **kw))
        slow2 = list(DataLoader(ds, collate_fn=lambda b: default_collate(b), **kw))
        assert len(fast) == len(slow) == len(slow2)
        for f, s, s2 in zip(fast, slow, slow2):
            assert isinstance(f, list) and len(f) == 2
            for a, b, c in zip(f, s, s2):
                assert a.dtype is b.dtype and a.shape == b.shape
                np.testing.assert_array_equal(a.numpy(), b.numpy())
                np.testing.assert_array_equal(a.numpy(), c.numpy())
    w = tp.randn(6, 2, requires_grad=True)       # gradients flow through either path
    for d in (TensorDataset(w), Plain(w)):
        (xb,) = next(iter(DataLoader(d, batch_sampler=[[4, 1, 1]])))
        (g,) = tp.autograd.grad(xb.sum(), w)
        np.testing.assert_array_equal(g.numpy()[:, 0], [0, 2, 0, 0, 1, 0])
    with pytest.raises(IndexError):
        list(DataLoader(ds, batch_sampler=[[23]]))
    with pytest.raises(IndexError):
        list(DataLoader(Plain(x, y), batch_sampler=[[23]]))


def test_the_data_benchmarks_run():
    bench = pytest.importorskip("benchmarks.benchmarks.bench_data")
    for path in ("gather", "general"):
        b = bench.LoaderEpoch()
        b.setup(path)
        b.time_epoch(path)
    step = bench.CNNStep()
    step.setup()
    step.time_step()
