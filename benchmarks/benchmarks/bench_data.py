"""asv suite: ``utils.data`` (one epoch of a shuffled ``DataLoader``) and the CNN
training step of examples/train_digits.py, with a same-process comparison with
torch (run this file).

* ``LoaderEpoch``: a ``TensorDataset`` of 1,347 (1, 8, 8) float32 images and
  int64 labels (the digits train split's shape), ``batch_size=64``,
  ``shuffle=True``: the fast gather path (``TensorDataset`` + ``default_collate``)
  and the general path (a ``TensorDataset`` subclass: samples fetched one by one
  and stacked by ``default_collate``, what torch's loader does).
* ``CNNStep``: zero_grad, forward, cross-entropy, backward and ``AdamW.step`` of
  the example's CNN (Conv2d(1, 32, 3, padding=1) -> ReLU -> MaxPool2d(2) ->
  Conv2d(32, 64, 3, padding=1) -> ReLU -> Flatten -> Linear(1024, 10)), batch 64.

``python -m benchmarks.benchmarks.bench_data`` (from the repository root) imports
tensorplay, then torch, and prints the median over alternating rounds of the
per-round time ratio tensorplay / torch (< 1: tensorplay faster).
"""
import numpy as np

import tensorplay as tp

from .common import rng


def _digits_like():
    r = rng()
    return (r.random((1347, 1, 8, 8)).astype(np.float32),
            r.integers(0, 10, 1347).astype(np.int64))


def make_loader(lib, general=False):
    data = lib.utils.data
    x, y = _digits_like()
    cls = data.TensorDataset
    if general:
        cls = type("Samples", (data.TensorDataset,), {})   # a subclass: the general path
    ds = cls(lib.from_numpy(x), lib.from_numpy(y))
    return data.DataLoader(ds, batch_size=64, shuffle=True,
                           generator=lib.Generator().manual_seed(0))


def epoch(loader):
    for _ in loader:
        pass


def make_cnn_step(lib):
    """A zero-argument callable running one training step of the example's CNN."""
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(1024, 10))
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    x, y = _digits_like()
    xb, yb = lib.from_numpy(x[:64]), lib.from_numpy(y[:64])

    def step():
        opt.zero_grad()
        loss_fn(model(xb), yb).backward()
        opt.step()
    step()
    return step


class LoaderEpoch:
    """One pass over a shuffled DataLoader, batch 64."""
    params = (["gather", "general"],)
    param_names = ("path",)
    timeout = 30

    def setup(self, path):
        self.loader = make_loader(tp, general=path == "general")

    def time_epoch(self, path):
        epoch(self.loader)


class CNNStep:
    """One AdamW training step of the example's CNN, batch 64."""
    timeout = 30

    def setup(self):
        self.step = make_cnn_step(tp)

    def time_step(self):
        self.step()


def compare(rounds=15):
    """Print median per-round ratios tensorplay / torch."""
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from harness import alternating_rounds, median_ratio
    import torch
    torch.set_num_threads(tp.get_num_threads())
    print(f"threads: {tp.get_num_threads()}; median of per-round ratios over {rounds} "
          f"alternating rounds (< 1: tensorplay faster)")
    fast, general, torch_loader = (make_loader(tp), make_loader(tp, general=True),
                                   make_loader(torch))
    cases = {
        "loader epoch, gather path": (lambda: epoch(fast), lambda: epoch(torch_loader)),
        "loader epoch, general path": (lambda: epoch(general),
                                       lambda: epoch(torch_loader)),
    }
    if hasattr(tp.nn, "Conv2d"):
        cases["CNN training step, b64"] = (make_cnn_step(tp), make_cnn_step(torch))
    for name, (ours, theirs) in cases.items():
        t = alternating_rounds({"tp": ours, "torch": theirs}, rounds, target=0.1)
        print(f"{name:28s} tp {np.median(t['tp']) * 1e3:8.2f} ms  torch "
              f"{np.median(t['torch']) * 1e3:8.2f} ms  ratio "
              f"{median_ratio(t['tp'], t['torch']):5.2f}")


if __name__ == "__main__":
    compare()
