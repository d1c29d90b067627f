"""``DistributedDataParallel`` (``torch.nn.parallel.DistributedDataParallel``) over
``tensorplay.distributed`` (MPI).

Each process holds a replica of the model and a share of the batch; DDP keeps the
replicas identical by starting them equal (rank 0's parameters and buffers are
broadcast at construction) and by averaging the gradients over the ranks during
backward, so that every optimiser step is the same on every rank and equals the
one-process step on the whole batch.  The averaging is ``_reducer.py``'s: buckets
all-reduced from the parameters' post-accumulate-grad hooks while backward is
still running; ``_sync.py`` holds the construction-time checks and broadcasts.
"""
import contextlib
import functools
import weakref

from tensorplay.nn.modules.module import Module
from tensorplay.nn.parallel import _sync
from tensorplay.nn.parallel._reducer import Reducer

__all__ = ["DistributedDataParallel"]

_UNUSED_MSG = (
    "Expected to have finished reduction in the prior iteration before starting a new "
    "one. This error indicates that your module has parameters that were not used in "
    "producing loss. You can enable unused parameter detection by passing the keyword "
    "argument `find_unused_parameters=True` to "
    "`tensorplay.nn.parallel.DistributedDataParallel`, and by making sure all `forward` "
    "function outputs participate in calculating loss. (A forward run with grad mode "
    "on and no backward after it leaves the reduction unfinished too: evaluate under "
    "`no_grad()`.) Parameters which did not receive grad for rank {rank}: {names}")


def _grad_ready(ddp_ref, i, param):
    """Post-accumulate-grad hook of parameter ``i`` (weak: a dropped DDP does nothing)."""
    ddp = ddp_ref()
    if ddp is not None and ddp._armed:
        ddp.reducer.mark_ready(i)


def _find_tensors(obj):
    """The Tensors in a forward's output (tensors, lists, tuples, dicts)."""
    from tensorplay._tensor import Tensor
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _find_tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _find_tensors(o)]
    return []


def _reachable_leaves(outputs):
    """ids of the leaf tensors the autograd graph of ``outputs`` reaches."""
    from tensorplay.autograd.graph import MultiNode, Node, _edges_of, _Port, edge_key
    seen, leaves = set(), set()
    stack = [edge_key(t) for t in outputs if t.requires_grad]
    while stack:
        key = stack.pop()
        if id(key) in seen:
            continue
        seen.add(id(key))
        if type(key) is not Node and type(key) is not _Port \
                and not isinstance(key, MultiNode):         # a leaf tensor
            leaves.add(id(key))
            continue
        edges = key.next_edges if type(key) is Node else _edges_of(key)
        stack.extend(e for e in edges if e is not None)
    return leaves


class DistributedDataParallel(Module):
    """Data parallelism across processes: wrap the model once per rank, train on
    each rank's share of the batch, step the optimiser as usual.

    Args:
        module (Module): the model (CPU; parameters equal on every rank after the
            construction's broadcast from rank 0).
        device_ids, output_device: must be None (CPU modules; PyTorch's rule).
        dim (int): accepted for PyTorch's signature (the input is not scattered).
        broadcast_buffers (bool): copy rank 0's buffers (e.g. BatchNorm's running
            statistics) to every rank at the start of each forward that syncs.
            Default True.
        init_sync (bool): broadcast parameters and buffers at construction.
        process_group: the group to average over (default: the world).
        bucket_cap_mb (float, optional): bucket size in MiB; default 25, with a
            first bucket of 1 MiB (PyTorch's defaults).
        find_unused_parameters (bool): walk the output's autograd graph after
            each forward and count the parameters it does not reach as ready,
            contributing their ``.grad`` (zeros if None); a parameter unused on
            every rank keeps its ``.grad`` untouched.  Without it, a parameter
            that gets no gradient in a backward makes the next forward raise
            RuntimeError (PyTorch's "Expected to have finished reduction ..."),
            naming it; a forward with no backward after it (an evaluation
            outside ``no_grad``) is allowed, as in PyTorch.
        gradient_as_bucket_view (bool): leave ``.grad`` as a view of the bucket
            after each reduction (saves the copy back).
        static_graph (bool): accepted; unused parameters are then handled as
            with ``find_unused_parameters`` (no graph caching).
        check_reduction: deprecated in PyTorch, ignored.

    Shapes and dtypes: gradients are averaged in their parameter's dtype
    (float32 or float64), ``grad = sum over ranks of (grad_r / world_size)``.

    Raises:
        RuntimeError: a module with no parameter requiring grad; ranks whose
            parameters (names, shapes, dtypes) differ from rank 0's (every rank
            raises, naming them); no process group.
        ValueError: ``device_ids``/``output_device`` given.
        NotImplementedError: ``mixed_precision``, ``device_mesh``,
            ``delay_all_reduce_named_params``, ``param_to_hook_all_reduce``,
            ``skip_all_reduce_unused_params=True``.

    Example::

        >>> dist.init_process_group("mpi")
        >>> model = DistributedDataParallel(make_model())
        >>> loss_fn(model(x_share), y_share).backward()   # grads averaged over ranks
        >>> opt.step()
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, init_sync=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None,
                 skip_all_reduce_unused_params=False):
        super().__init__()
        import tensorplay.distributed as dist
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel(): module must be an nn.Module, got "
                            f"{type(module).__name__}")
        if device_ids is not None or output_device is not None:
            raise ValueError(
                f"DistributedDataParallel device_ids and output_device arguments only "
                f"work with single-device/multiple-device GPU modules or CPU modules, but "
                f"got device_ids {device_ids}, output_device {output_device}, and module "
                f"parameters on the CPU (tensorplay has no GPUs: leave both None).")
        for name, value in (("mixed_precision", mixed_precision),
                            ("device_mesh", device_mesh),
                            ("delay_all_reduce_named_params", delay_all_reduce_named_params),
                            ("param_to_hook_all_reduce", param_to_hook_all_reduce)):
            if value is not None:
                raise NotImplementedError(f"DistributedDataParallel(): {name} is not "
                                          f"implemented in tensorplay")
        if skip_all_reduce_unused_params:
            raise NotImplementedError("DistributedDataParallel(): "
                                      "skip_all_reduce_unused_params=True is not implemented")
        if bucket_cap_mb is not None and not bucket_cap_mb > 0:
            raise ValueError(f"DistributedDataParallel(): bucket_cap_mb must be positive, "
                             f"got {bucket_cap_mb}")
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module "
                               "doesn't have any parameter that requires a gradient.")
        self.module = module
        self.device_ids, self.output_device, self.dim = None, None, dim
        self.process_group = process_group
        self.broadcast_buffers = bool(broadcast_buffers)
        self.find_unused_parameters = bool(find_unused_parameters)
        self.gradient_as_bucket_view = bool(gradient_as_bucket_view)
        self.static_graph = bool(static_graph)
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb)
                                    * 1024 * 1024)
        self._rank = dist.get_rank(process_group)
        self._world_size = dist.get_world_size(process_group)
        names = [n for n, _ in named]
        params = [p for _, p in named]
        _sync.verify_params(named, self._rank, self._world_size, process_group)
        if init_sync and self._world_size > 1:
            with _no_grad():
                _sync.broadcast_tensors(params + self._buffers_to_sync(), 0, process_group)
        self.reducer = Reducer(names, params, bucket_cap_mb, process_group,
                               self._world_size, self.gradient_as_bucket_view)
        self._armed = False
        ref = weakref.ref(self)
        handles = [p.register_post_accumulate_grad_hook(
            functools.partial(_grad_ready, ref, i)) for i, p in enumerate(params)]
        weakref.finalize(self, _remove_all, handles)

    def _buffers_to_sync(self):
        return [b for b in self.module.buffers() if b is not None]

    # ------------------------------------------------------------------ forward
    def forward(self, *inputs, **kwargs):
        """``module(*inputs, **kwargs)``, with buffers broadcast from rank 0 first
        (``broadcast_buffers``) and a gradient reduction armed for the next
        backward when grad mode is on and not inside ``no_sync()``."""
        from tensorplay.autograd.grad_mode import is_grad_enabled
        sync = is_grad_enabled() and self.require_backward_grad_sync
        if sync and self.reducer.open:
            if self.reducer.hooked:         # a backward ran but left parameters out
                raise RuntimeError(_UNUSED_MSG.format(
                    rank=self._rank, names=", ".join(self.reducer.unfinished())))
            self.reducer.abandon()          # no backward followed the last forward
        if (self.require_forward_param_sync and self.broadcast_buffers
                and self._world_size > 1):
            buffers = self._buffers_to_sync()
            if buffers:
                with _no_grad():
                    _sync.broadcast_tensors(buffers, 0, self.process_group)
        output = self.module(*inputs, **kwargs)
        self._armed = sync
        self.require_forward_param_sync = sync
        if sync:
            self._prepare_for_backward(output)
        return output

    def _prepare_for_backward(self, output):
        unused = ()
        if self.find_unused_parameters or self.static_graph:
            import tensorplay
            import tensorplay.distributed as dist
            reached = _reachable_leaves(_find_tensors(output))
            used = [id(p) in reached for p in self.reducer.params]
            unused = [i for i, u in enumerate(used) if not u]
            counts = tensorplay.tensor([int(u) for u in used], dtype=tensorplay.int64)
            # before any bucket can start: every rank issues the same sequence
            self.reducer.used = (dist.all_reduce(counts, group=self.process_group,
                                                 async_op=True), counts)
        self.reducer.start_round(unused)

    @contextlib.contextmanager
    def no_sync(self):
        """Context manager: forwards and backwards inside it accumulate gradients
        locally, unsynchronised; the first forward-backward after it averages the
        accumulated ``.grad`` over the ranks.  The forward must be inside it."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # ------------------------------------------------------------------ not here
    def join(self, *args, **kwargs):
        """Not implemented (uneven inputs): give every rank the same number of
        batches, e.g. ``DistributedSampler(..., drop_last=True)``."""
        raise NotImplementedError("DistributedDataParallel.join() is not implemented in "
                                  "tensorplay; give every rank the same number of batches "
                                  "(DistributedSampler pads or drops to make them equal)")

    def register_comm_hook(self, state, hook):
        """Not implemented: the reduction is always the averaging all-reduce."""
        raise NotImplementedError("DistributedDataParallel.register_comm_hook() is not "
                                  "implemented in tensorplay")


def _no_grad():
    from tensorplay.autograd.grad_mode import no_grad
    return no_grad()


def _remove_all(handles):
    for h in handles:
        h.remove()
