"""Train an MLP and a small CNN on scikit-learn's handwritten digits with tensorplay.

The main job of the tensorplay README:

    python examples/train_digits.py              # both models, well under a minute
    python examples/train_digits.py --library torch   # the same script on PyTorch
    python examples/train_digits.py --help
    mpiexec -n 2 python examples/train_digits.py --distributed    # data-parallel
    mpiexec -n 2 python examples/train_digits.py --distributed --check

What it does:
1. loads the 1,797 real 8x8 digit images bundled with scikit-learn (no download),
   scales pixels to [0, 1] and splits train/test (75/25, stratified, fixed seed),
   served in shuffled minibatches by ``utils.data.DataLoader`` over a
   ``TensorDataset`` (a seeded ``Generator``);
2. trains a 64 -> 128 (ReLU) -> 10 MLP (``nn.Sequential`` of ``nn.Linear``) with
   ``optim.Adam`` (30 epochs), and a small CNN -- Conv2d(1, 32, 3, padding=1) ->
   ReLU -> MaxPool2d(2) -> Conv2d(32, 64, 3, padding=1) -> ReLU -> Flatten ->
   Linear(1024, 10) -- with ``optim.AdamW`` and a ``CosineAnnealingLR`` schedule
   (20 epochs, batches of 64, peak lr 5e-3, label smoothing 0.1), both on
   ``nn.CrossEntropyLoss``, with a tqdm progress bar;
3. prints train and test accuracy (the CNN: >= 0.98 on the held-out split) and
   saves a figure of the loss and test-accuracy curves (matplotlib);
4. draws the graph of one CNN training step (``autograd.graph.render``) when the
   graphviz package and program are installed, and says so when they are not;
5. saves the CNN's ``state_dict()`` with ``tensorplay.save``, loads it into a fresh
   CNN and checks that both give identical outputs;
6. computes the Jacobian-vector product of the trained MLP's logits with respect
   to a batch of test images along a random direction, with
   ``functional.jvp(mode="forward")`` and ``mode="reversed"``, in float64, and
   prints the largest difference between the two and the time each took.

Data-parallel (``--distributed``, under ``mpiexec -n P``): every process holds a
replica of each model wrapped in ``nn.parallel.DistributedDataParallel`` and reads
its share of each global batch of ``--batch-size`` images through a
``utils.data.DistributedSampler``; gradients are averaged over the processes during
backward, so the run follows the same trajectory for every P that divides the
batch size.  Rank 0 alone prints the progress bar and writes the files.  The data
order is the sampler's (a permutation from ``seed + epoch``; the last incomplete
global batch of each epoch is dropped), not the plain run's, so the numbers
differ from a run without ``--distributed``.  ``--check`` then retrains both
models on rank 0 in one process with the same global batches, seed and initial
parameters, and compares the final parameters (equal to float32 round-off).

The training code is PyTorch's API: ``--library torch`` runs the same functions
with ``import torch`` in place of ``import tensorplay`` (steps 4 and 6 use
tensorplay-only tools and are skipped there).  Runs are seeded and repeat exactly;
the numbers differ from torch's (numpy's random streams, not torch's).
"""
import argparse
import importlib
import importlib.util
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import tensorplay as tp      # main(["--library", "torch"]) rebinds this name to torch

HERE = Path(__file__).resolve().parent


# ---------------------------------------------------------------- data
def load_data(seed):
    """Digits as numpy arrays: x (N, 64) float32 in [0, 1], y (N,) int64; train, test."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)          # (1797, 64), pixels 0..16
    y = digits.target.astype(np.int64)                   # (1797,), classes 0..9
    return train_test_split(x, y, test_size=0.25, random_state=seed, stratify=y)


def make_loader(x, y, batch_size, seed, image, shard=None):
    """A shuffled DataLoader of (images, labels); images (B, 1, 8, 8) if ``image``.

    ``shard=(rank, world)``: this rank's share of every global batch of
    ``batch_size`` (a DistributedSampler, ``batch_size // world`` per rank, the
    last incomplete batch dropped, so that every ``world`` dividing the batch size
    sees the same global batches: perm[64k:64k+64] for step k)."""
    data = tp.utils.data
    xt = tp.from_numpy(x.reshape(-1, 1, 8, 8) if image else x)
    ds = data.TensorDataset(xt, tp.from_numpy(y))
    if shard is None:
        return data.DataLoader(ds, batch_size=batch_size, shuffle=True,
                               generator=tp.Generator().manual_seed(seed))
    rank, world = shard
    sampler = data.DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True,
                                      seed=seed)
    return data.DataLoader(ds, batch_size=batch_size // world, sampler=sampler,
                           drop_last=True)


# ---------------------------------------------------------------- models
def make_mlp():
    nn = tp.nn
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def make_cnn(channels=(32, 64)):
    nn = tp.nn
    c1, c2 = channels
    return nn.Sequential(
        nn.Conv2d(1, c1, kernel_size=3, padding=1), nn.ReLU(),     # (B, c1, 8, 8)
        nn.MaxPool2d(2),                                            # (B, c1, 4, 4)
        nn.Conv2d(c1, c2, kernel_size=3, padding=1), nn.ReLU(),    # (B, c2, 4, 4)
        nn.Flatten(), nn.Linear(c2 * 4 * 4, 10))


# ---------------------------------------------------------------- training
def evaluate(model, x, y, image):
    """Accuracy of ``model`` on numpy arrays ``x``, ``y``."""
    model.eval()
    with tp.no_grad():
        xt = tp.from_numpy(x.reshape(-1, 1, 8, 8) if image else x)
        pred = model(xt).numpy().argmax(axis=1)
    model.train()
    return float(np.mean(pred == y))


def train(name, model, data, *, epochs, batch_size, lr, seed, image, cnn, shard=None):
    """Minibatch training; returns per-epoch (mean train loss, test accuracy) and the
    per-step losses.  The CNN uses AdamW with a cosine schedule, the MLP Adam.

    ``shard=(rank, world)``: data-parallel training of ``model`` (wrapped in
    DistributedDataParallel by the caller when world > 1) on this rank's share of
    each global batch; the losses reported are averaged over the ranks (the
    global batch's), and only rank 0 shows the progress bar and evaluates."""
    from tqdm import tqdm
    x_tr, x_te, y_tr, y_te = data
    rank, world = shard or (0, 1)
    loader = make_loader(x_tr, y_tr, batch_size, seed, image, shard)
    inner = getattr(model, "module", model)         # the model inside DDP
    # label smoothing (Szegedy et al., 2016) made the CNN's test accuracy steadier
    # across seeds (torch, 5 seeds: min 0.989 with 0.1, 0.980 without)
    loss_fn = tp.nn.CrossEntropyLoss(label_smoothing=0.1 if cnn else 0.0)
    if cnn:
        opt = tp.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-2)
        sched = tp.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * len(loader))
    else:
        opt, sched = tp.optim.Adam(model.parameters(), lr=lr), None
    history = {"loss": [], "test_acc": [], "steps": []}
    bar = tqdm(range(epochs), desc=f"training the {name}", unit="epoch",
               disable=rank != 0)
    for epoch in bar:
        if shard is not None:
            loader.sampler.set_epoch(epoch)
        epoch_losses = []
        for xb, yb in loader:
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            epoch_losses.append(loss.item())
            if not math.isfinite(epoch_losses[-1]):
                raise FloatingPointError(
                    f"the {name}'s training loss became {epoch_losses[-1]} at step "
                    f"{len(history['steps']) + len(epoch_losses)} (learning rate {lr}); "
                    f"try a smaller {'--lr' if cnn else '--mlp-lr'}")
        if world > 1:               # the global batches' losses, for the record
            import tensorplay.distributed as dist
            t = tp.tensor(epoch_losses, dtype=tp.float64)
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
            epoch_losses = t.tolist()
        history["steps"] += epoch_losses
        history["loss"].append(float(np.mean(epoch_losses)))
        history["test_acc"].append(evaluate(inner, x_te, y_te, image) if rank == 0
                                   else float("nan"))
        bar.set_postfix(loss=f"{history['loss'][-1]:.4f}",
                        test_acc=f"{history['test_acc'][-1]:.4f}")
    return history


# ---------------------------------------------------------------- outputs
def save_curves(histories, path):
    """Loss (log scale) and test accuracy per epoch, one line per model."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    for name, h in histories.items():
        epochs = np.arange(1, len(h["loss"]) + 1)
        ax_loss.plot(epochs, h["loss"], marker=".",
                     label=name + (" (label smoothing 0.1: floor ~0.5)" if name == "CNN"
                                   else ""))
        ax_acc.plot(epochs, h["test_acc"], marker=".", label=name)
    ax_loss.set(xlabel="epoch", ylabel="mean training cross-entropy", yscale="log",
                title="training loss")
    ax_acc.set(xlabel="epoch", ylabel="accuracy on the held-out 25%", title="test accuracy")
    ax_acc.set_ylim(0.8, 1.0)
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(f"{tp.__name__} on sklearn digits")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def save_step_graph(model, data, path):
    """Draw the graph of one CNN training step (forward + loss); a note if graphviz
    (the package or the ``dot`` program) is missing.  Returns the path or None."""
    if tp.__name__ != "tensorplay":
        print("graph picture: skipped (tensorplay.autograd.graph.render is "
              "tensorplay's; torch users have torchviz)")
        return None
    x_tr, _, y_tr, _ = data
    xb = tp.from_numpy(x_tr[:8].reshape(-1, 1, 8, 8))
    loss = tp.nn.functional.cross_entropy(model(xb), tp.from_numpy(y_tr[:8]))
    try:
        tp.autograd.graph.render(loss, path, format="png",
                                 params=dict(model.named_parameters()))
    except RuntimeError as e:
        print(f"graph picture: skipped ({e})".split(";")[0])
        return None
    return path


def check_state_dict_round_trip(model, x, path):
    """Save the state dict, load it into a fresh CNN, assert identical outputs."""
    tp.save(model.state_dict(), path)
    fresh = make_cnn()
    fresh.load_state_dict(tp.load(path))
    model.eval()
    fresh.eval()
    with tp.no_grad():
        xt = tp.from_numpy(x[:64].reshape(-1, 1, 8, 8))
        a, b = model(xt).numpy(), fresh(xt).numpy()
    model.train()
    assert np.array_equal(a, b), "the reloaded model's outputs differ"
    return float(np.max(np.abs(a - b)))


def compare_jvp_modes(model, x_te, seed, repeats=5):
    """JVP of the MLP's logits w.r.t. a test batch along a random direction, both
    modes, in float64.

    Returns (max |forward - reversed|, median seconds forward, median seconds reversed).
    """
    from tensorplay.autograd.functional import jvp
    f64 = make_mlp()
    f64.load_state_dict(model.state_dict())
    f64.to(tp.float64)
    x = tp.from_numpy(x_te[:128].astype(np.float64))
    v = tp.randn(*x.shape, dtype=tp.float64, generator=tp.Generator().manual_seed(seed))
    results, times = {}, {}
    for mode in ("forward", "reversed"):
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            _, results[mode] = jvp(f64, x, v, mode=mode)
            ts.append(time.perf_counter() - t0)
        times[mode] = float(np.median(ts))
    diff = float(np.max(np.abs(results["forward"].numpy() - results["reversed"].numpy())))
    return diff, times["forward"], times["reversed"]


# ---------------------------------------------------------------- main
def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=20, help="CNN epochs (default 20)")
    p.add_argument("--mlp-epochs", type=int, default=30, help="MLP epochs (default 30)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=5e-3,
                   help="the CNN's peak learning rate (default 5e-3)")
    p.add_argument("--mlp-lr", type=float, default=3e-3,
                   help="the MLP's learning rate (default 3e-3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--models", choices=("both", "mlp", "cnn"), default="both")
    p.add_argument("--library", choices=("tensorplay", "torch"), default="tensorplay",
                   help="run the same training code on torch (for comparison)")
    p.add_argument("--out-dir", default=str(HERE),
                   help="where the figure and the graph picture go (default: beside "
                        "this script)")
    p.add_argument("--save", default=None,
                   help="keep the CNN's state dict at this path (default: a temporary "
                        "file, removed after the reload check)")
    p.add_argument("--distributed", action="store_true",
                   help="data-parallel training over the processes of an MPI job "
                        "(mpiexec -n P python ...; tensorplay.distributed, "
                        "DistributedDataParallel, DistributedSampler)")
    p.add_argument("--check", action="store_true",
                   help="with --distributed: retrain on rank 0 alone with the same "
                        "global batches and compare the final parameters (fails "
                        "unless equal to round-off with --dtype float64)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                   help="the models' and images' dtype (default float32)")
    args = p.parse_args(argv)
    if args.epochs < 1 or args.mlp_epochs < 1 or not 1 <= args.batch_size <= 1347:
        p.error("--epochs and --mlp-epochs must be positive and --batch-size in "
                "[1, 1347] (the train split)")
    for name in ("lr", "mlp_lr"):
        v = getattr(args, name)
        if not (math.isfinite(v) and v > 0):
            p.error(f"--{name.replace('_', '-')} must be a positive number, got {v}")
    if args.seed < 0:
        p.error(f"--seed must be non-negative, got {args.seed}")
    if not Path(args.out_dir).is_dir():        # before training, not after it
        p.error(f"--out-dir: the directory {args.out_dir} does not exist")
    if importlib.util.find_spec(args.library) is None:
        p.error(f"--library {args.library}: it is not installed")
    if args.save is not None and not Path(args.save).resolve().parent.is_dir():
        p.error(f"--save: the directory {Path(args.save).resolve().parent} does not exist")
    if args.check and not args.distributed:
        p.error("--check compares a --distributed run with a one-process run: add "
                "--distributed")
    if args.distributed and args.library != "tensorplay":
        p.error("--distributed runs on tensorplay.distributed (MPI); torch's MPI backend "
                "needs a source build of torch")
    if args.distributed and importlib.util.find_spec("mpi4py") is None:
        p.error("--distributed needs mpi4py and an MPI: pip install mpi4py mpich")
    return args


def start_distributed(batch_size):
    """Join the MPI job (a job of one when not under mpiexec); returns (rank, world)."""
    import tensorplay.distributed as dist
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    if batch_size % world:
        if rank == 0:
            print(f"error: --batch-size {batch_size} must be divisible by the number of "
                  f"processes ({world}): every rank takes an equal share of each batch",
                  file=sys.stderr)
        dist.destroy_process_group()
        sys.exit(2)
    return rank, world


def compare_with_one_process(name, trained, initial, data, kwargs):
    """Retrain ``initial`` (the same starting parameters) in this process alone,
    with the same global batches, and return max |difference| of the parameters
    and the parameters' largest magnitude."""
    train(name + " (1 process)", initial, data, shard=(0, 1), **kwargs)
    diff = scale = 0.0
    for (key, a), b in zip(trained.state_dict().items(), initial.state_dict().values()):
        a, b = a.numpy(), b.numpy()
        diff = max(diff, float(np.max(np.abs(a - b))))
        scale = max(scale, float(np.max(np.abs(b))))
    return diff, scale


def main(argv=None):
    global tp
    args = parse_args(argv)
    tp = importlib.import_module(args.library)
    previous = tp.get_default_dtype()
    tp.set_default_dtype(getattr(tp, args.dtype))     # restored: main() runs in tests
    try:
        return run(args)
    finally:
        tp.set_default_dtype(previous)


def run(args):
    """The whole job (main() after parsing the options)."""
    rank, world = start_distributed(args.batch_size) if args.distributed else (0, 1)
    say = print if rank == 0 else (lambda *a, **k: None)
    t_start = time.perf_counter()
    tp.manual_seed(args.seed)
    data = [a.astype(args.dtype) if a.dtype.kind == "f" else a
            for a in load_data(args.seed)]
    x_tr, x_te, y_tr, y_te = data
    say(f"digits: {len(x_tr)} train / {len(x_te)} test images of 8x8 pixels "
        f"({args.library})" + (f", data-parallel over {world} process"
                               f"{'es' if world > 1 else ''} (global batch "
                               f"{args.batch_size}, {args.batch_size // world} per rank)"
                               if args.distributed else ""))
    out_dir = Path(args.out_dir)
    histories, metrics, models = {}, {}, {}
    todo = {"mlp": ("MLP", make_mlp, args.mlp_epochs, args.mlp_lr, False),
            "cnn": ("CNN", make_cnn, args.epochs, args.lr, True)}
    for key, (name, make, epochs, lr, cnn) in todo.items():
        if args.models not in ("both", key):
            continue
        model = models[key] = make()
        kwargs = dict(epochs=epochs, batch_size=args.batch_size, lr=lr, seed=args.seed,
                      image=cnn, cnn=cnn)
        if args.distributed:
            from tensorplay.nn.parallel import DistributedDataParallel
            ddp = DistributedDataParallel(model)    # rank 0's initial parameters
            initial = make()
            initial.load_state_dict(model.state_dict())
            kwargs["shard"] = (rank, world)
        try:
            h = train(name, ddp if args.distributed else model, data, **kwargs)
        except FloatingPointError as e:
            sys.exit(f"error: {e}")
        histories[name] = h
        m = metrics[key] = {"train_acc": evaluate(model, x_tr, y_tr, cnn),
                            "test_acc": h["test_acc"][-1], "losses": h["steps"],
                            "history": h}
        say(f"{name}: train accuracy {m['train_acc']:.4f}, test accuracy "
            f"{m['test_acc']:.4f}")
        if args.check and rank == 0:
            del kwargs["shard"]
            diff, scale = compare_with_one_process(name, model, initial, data, kwargs)
            m["check_max_diff"], m["check_scale"] = diff, scale
            print(f"check: {name} trained on {world} process{'es' if world > 1 else ''} "
                  f"vs 1: max |parameter difference| = {diff:.2e} (largest parameter "
                  f"{scale:.2f}, {args.dtype})")
            if args.dtype == "float32":
                print("  (float32: Adam divides each step by sqrt(v), so round-off in "
                      "near-zero gradients grows over the run; --dtype float64 shows "
                      "the agreement to round-off)")
            elif diff > 1e-9 * max(1.0, scale):
                sys.exit(f"error: the {name}'s parameters differ by {diff:.2e} between "
                         f"{world} processes and 1 (expected float64 round-off)")
    if rank != 0:                   # rank 0 alone writes files and runs the extras
        import tensorplay.distributed as dist
        dist.destroy_process_group()
        return metrics
    curves = out_dir / "digits_curves.png"
    save_curves(histories, curves)
    print(f"loss and accuracy curves saved to {curves}")
    if "cnn" in models:
        graph = save_step_graph(models["cnn"], data, out_dir / "digits_graph.png")
        if graph is not None:
            print(f"graph of one training step saved to {graph}")
        with tempfile.TemporaryDirectory() as tmp:
            path = args.save or str(Path(tmp) / "digits_cnn.pt")
            check_state_dict_round_trip(models["cnn"], x_te, path)
            print(f"state dict saved to {path if args.save else 'a temporary file'} and "
                  f"reloaded into a fresh CNN: identical outputs")
    if "mlp" in models and args.library == "tensorplay":
        diff, t_fwd, t_rev = compare_jvp_modes(models["mlp"], x_te, args.seed)
        metrics["jvp_max_diff"] = diff
        print("JVP of the MLP's logits w.r.t. 128 test images (float64), random direction:")
        print(f"  max |forward - reversed| = {diff:.3e}")
        print(f"  forward mode:  {t_fwd * 1e3:.2f} ms   reversed mode: "
              f"{t_rev * 1e3:.2f} ms (median of 5)")
    metrics["seconds"] = time.perf_counter() - t_start
    print(f"total time: {metrics['seconds']:.1f} s")
    if args.distributed:
        import tensorplay.distributed as dist
        dist.destroy_process_group()
    return metrics


if __name__ == "__main__":
    main()
