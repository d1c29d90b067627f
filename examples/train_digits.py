"""Train a 64-128-10 MLP on scikit-learn's handwritten digits with tensorplay.

The main job of the tensorplay README:

    python examples/train_digits.py            # ~30 epochs, a few seconds
    python examples/train_digits.py --help

What it does:
1. loads the 1,797 real 8x8 digit images bundled with scikit-learn (no
   download), scales pixels to [0, 1], and splits train/test (75/25, stratified,
   fixed seed);
2. trains a 64 -> 128 (ReLU) -> 10 MLP with softmax cross-entropy by minibatch
   Adam, where every gradient comes from ``tensorplay.autograd.grad`` and the Adam
   update (Kingma & Ba, 2015, Algorithm 1) is written out in tensorplay ops;
3. prints train and test accuracy and saves the loss curve as a PNG;
4. computes the Jacobian-vector product of the trained network's logits with
   respect to a batch of test images along a random direction, with
   ``functional.jvp(mode="forward")`` and ``mode="reversed"``, in float64, and
   prints the largest difference between the two and the time each took.
"""
import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

import tensorplay as tp
from tensorplay.autograd.functional import jvp


def load_data(seed):
    """Digits as float32 tensors in [0, 1]: (x_train, y_train, x_test, y_test)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)          # (1797, 64), pixels 0..16
    y = digits.target.astype(np.int64)                   # (1797,), classes 0..9
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.25, random_state=seed,
                                              stratify=y)
    return (tp.from_numpy(x_tr), tp.from_numpy(y_tr), tp.from_numpy(x_te),
            tp.from_numpy(y_te))


def init_params(sizes=(64, 128, 10)):
    """He-initialised weights (fan_in, fan_out) and zero biases, requiring grad."""
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = tp.randn(fan_in, fan_out) * float(np.sqrt(2.0 / fan_in))
        params += [w.requires_grad_(), tp.zeros(fan_out, requires_grad=True)]
    return params


def mlp(params, x):
    """Logits (N, 10) of the MLP for images x (N, 64)."""
    w1, b1, w2, b2 = params
    return tp.relu(x @ w1 + b1) @ w2 + b2


class Adam:
    """Adam over a list of tensors, updated in place under ``no_grad``."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        self.params, self.lr, self.betas, self.eps = params, lr, betas, eps
        self.m = [tp.zeros_like(p) for p in params]
        self.v = [tp.zeros_like(p) for p in params]
        self.t = 0

    @tp.no_grad()
    def step(self, grads):
        b1, b2 = self.betas
        self.t += 1
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m.mul_(b1).add_(g, alpha=1 - b1)                 # m = b1 m + (1 - b1) g
            v.mul_(b2).add_(g * g, alpha=1 - b2)             # v = b2 v + (1 - b2) g^2
            m_hat = m / (1 - b1 ** self.t)
            v_hat = v / (1 - b2 ** self.t)
            p.sub_(self.lr * m_hat / (v_hat.sqrt() + self.eps))


def accuracy(params, x, y):
    with tp.no_grad():
        pred = mlp(params, x).numpy().argmax(axis=1)
    return float(np.mean(pred == y.numpy()))


def train(params, x_tr, y_tr, epochs, batch_size, lr, seed):
    """Minibatch Adam; returns the per-step training losses."""
    from tqdm import tqdm
    opt = Adam(params, lr=lr)
    rng = np.random.default_rng(seed)
    n = x_tr.shape[0]
    x_np, y_np = x_tr.numpy(), y_tr.numpy()
    losses = []
    bar = tqdm(range(epochs), desc="training", unit="epoch")
    for _ in bar:
        perm = rng.permutation(n)             # minibatches by numpy fancy indexing
        for start in range(0, n - batch_size + 1, batch_size):   # drop_last=True
            idx = perm[start:start + batch_size]
            xb, yb = tp.from_numpy(x_np[idx]), tp.from_numpy(y_np[idx])
            loss = tp.nn.functional.cross_entropy(mlp(params, xb), yb)
            grads = tp.autograd.grad(loss, params)
            opt.step(grads)
            losses.append(loss.item())
            if not math.isfinite(losses[-1]):
                raise FloatingPointError(
                    f"the training loss became {losses[-1]} at step {len(losses)} "
                    f"(learning rate {lr}); try a smaller --lr")
        bar.set_postfix(loss=f"{np.mean(losses[-(n // batch_size):]):.4f}")
    return losses


def save_loss_curve(losses, path, steps_per_epoch):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    steps = np.arange(1, len(losses) + 1)
    ax.plot(steps / steps_per_epoch, losses, lw=0.8, alpha=0.5, label="minibatch")
    k = steps_per_epoch
    if len(losses) >= k:
        smooth = np.convolve(losses, np.ones(k) / k, mode="valid")
        ax.plot(steps[k - 1:] / steps_per_epoch, smooth, lw=2,
                label=f"mean of the last {k} steps (one epoch)")
    ax.set_xlabel("epoch")
    ax.set_ylabel("cross-entropy loss")
    ax.set_yscale("log")
    ax.set_title("tensorplay MLP on sklearn digits")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def compare_jvp_modes(params, x_te, seed, repeats=5):
    """JVP of the logits w.r.t. a test batch along a random direction, both modes.

    Returns (max |forward - reversed|, median seconds forward, median seconds reversed).
    """
    params64 = [p.detach().double() for p in params]
    x = x_te[:128].double()
    tp.manual_seed(seed)
    v = tp.randn(*x.shape, dtype=tp.float64)
    f = lambda inp: mlp(params64, inp)  # noqa: E731
    results, times = {}, {}
    for mode in ("forward", "reversed"):
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            _, results[mode] = jvp(f, x, v, mode=mode)
            ts.append(time.perf_counter() - t0)
        times[mode] = float(np.median(ts))
    diff = float(np.max(np.abs(results["forward"].numpy() - results["reversed"].numpy())))
    return diff, times["forward"], times["reversed"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(Path(__file__).resolve().parent / "digits_loss.png"),
                   help="loss-curve PNG path (default: digits_loss.png beside this script)")
    args = p.parse_args(argv)
    if args.epochs < 1 or not 1 <= args.batch_size <= 1347:
        p.error("--epochs must be positive and --batch-size in [1, 1347] (the train split)")
    if not (math.isfinite(args.lr) and args.lr > 0):
        p.error(f"--lr must be a positive number, got {args.lr}")
    if args.seed < 0:
        p.error(f"--seed must be non-negative, got {args.seed}")
    out_dir = Path(args.out).resolve().parent
    if not out_dir.is_dir():        # before training, not after it
        p.error(f"--out: the directory {out_dir} does not exist")

    t_start = time.perf_counter()
    tp.manual_seed(args.seed)
    x_tr, y_tr, x_te, y_te = load_data(args.seed)
    print(f"digits: {x_tr.shape[0]} train / {x_te.shape[0]} test images of 8x8 pixels")
    params = init_params()
    try:
        losses = train(params, x_tr, y_tr, args.epochs, args.batch_size, args.lr, args.seed)
    except FloatingPointError as e:
        sys.exit(f"error: {e}")
    train_acc, test_acc = accuracy(params, x_tr, y_tr), accuracy(params, x_te, y_te)
    print(f"train accuracy: {train_acc:.4f}")
    print(f"test accuracy:  {test_acc:.4f}")
    save_loss_curve(losses, args.out, x_tr.shape[0] // args.batch_size)
    print(f"loss curve saved to {args.out}")

    diff, t_fwd, t_rev = compare_jvp_modes(params, x_te, args.seed)
    print(f"JVP of the logits w.r.t. 128 test images (float64), random direction:")
    print(f"  max |forward - reversed| = {diff:.3e}")
    print(f"  forward mode:  {t_fwd * 1e3:.2f} ms   reversed mode: {t_rev * 1e3:.2f} ms "
          f"(median of 5)")
    print(f"total time: {time.perf_counter() - t_start:.1f} s")
    return {"train_acc": train_acc, "test_acc": test_acc, "jvp_max_diff": diff,
            "losses": losses}


if __name__ == "__main__":
    main()
