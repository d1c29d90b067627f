"""DDP's gradient reducer: buckets of parameters, all-reduced during backward.

Parameters are assigned to buckets once, in reverse registration order (roughly
the order in which backward produces their gradients), one dtype per bucket; a
bucket is closed as soon as it holds at least its byte limit (PyTorch's
``compute_bucket_assignment_by_size``: 1 MiB for the first bucket and
``bucket_cap_mb`` after it when the cap is the default, ``bucket_cap_mb`` for all
otherwise).  Each bucket owns one flat buffer.

A round is opened by a forward that will sync; each parameter's
post-accumulate-grad hook (which runs during backward, when its ``.grad`` is
final for the pass: autograd/_accumulate.py) copies ``.grad`` into its slot of
the bucket; when a bucket's last slot is filled it is divided by the world size
and its ``all_reduce(async_op=True)`` is started -- buckets strictly in index
order, so every rank issues the same collectives in the same order (MPI's rule),
whatever order the hooks run in.  When the last bucket has started, the reducer
waits for them all and writes the averaged gradients back to ``.grad`` (or makes
``.grad`` a view of the bucket, ``gradient_as_bucket_view``).  That hook is the
last DDP parameter to receive its gradient, so this is the end of backward for
the module; the remaining engine work is outside it.
"""
import numpy as np

_MIB = 1024 * 1024
_FIRST_BUCKET_BYTES = 1 * _MIB          # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES


class Bucket:
    """Parameters ``indices`` (into the reducer's list), their offsets in the flat
    buffer ``flat`` (a Tensor of ``dtype``), and the round's readiness."""
    __slots__ = ("indices", "offsets", "numels", "flat", "pending", "work")

    def __init__(self, indices, params, dtype):
        import tensorplay
        self.indices = list(indices)
        self.numels = [params[i].numel() for i in self.indices]
        self.offsets = list(np.cumsum([0] + self.numels[:-1]))
        self.flat = tensorplay.zeros(sum(self.numels), dtype=dtype)
        self.pending = len(self.indices)
        self.work = None

    def view(self, k, shape):
        """Slot ``k`` of the buffer as a Tensor of ``shape`` (shares storage)."""
        off = int(self.offsets[k])
        return self.flat[off:off + self.numels[k]].view(shape)


def assign_buckets(params, bucket_cap_mb):
    """Lists of parameter indices, in reverse registration order, split by dtype
    and by size (PyTorch's limits; module docstring)."""
    if bucket_cap_mb is None:
        limits = [_FIRST_BUCKET_BYTES, 25 * _MIB]
    else:
        limits = [int(bucket_cap_mb * _MIB)]
    open_buckets = {}           # dtype -> (indices, bytes, how many closed before)
    buckets = []
    for i in reversed(range(len(params))):
        p = params[i]
        key = p.dtype
        indices, size, closed = open_buckets.get(key, ([], 0, 0))
        indices.append(i)
        size += p._data.nbytes
        if size >= limits[min(closed, len(limits) - 1)]:
            buckets.append(indices)
            open_buckets[key] = ([], 0, closed + 1)
        else:
            open_buckets[key] = (indices, size, closed)
    buckets += [indices for indices, _, _ in open_buckets.values() if indices]
    return buckets


class Reducer:
    """The state of one DDP's gradient synchronisation (module docstring)."""

    def __init__(self, names, params, bucket_cap_mb, group, world_size,
                 gradient_as_bucket_view):
        self.names, self.params = names, params
        self.group, self.world_size = group, world_size
        self.as_view = gradient_as_bucket_view
        self.buckets = [Bucket(ix, params, params[ix[0]].dtype)
                        for ix in assign_buckets(params, bucket_cap_mb)]
        self.where = {}             # param index -> (bucket, slot)
        for b, bucket in enumerate(self.buckets):
            for k, i in enumerate(bucket.indices):
                self.where[i] = (b, k)
        self.open = False           # a round is running (forward armed it)
        self.hooked = False         # ... and a gradient hook has fired in it
        self.ready = [False] * len(params)
        self.next_bucket = 0        # the next bucket to launch (launch in order)
        self.used = None            # find_unused_parameters: the used-map's Work/tensor
        self.bytes_last_round = 0

    # ----------------------------------------------------------------- rounds
    def start_round(self, unused=()):
        """Open a round; ``unused`` parameter indices count as ready now, with
        their ``.grad`` (or zeros) as contribution (find_unused_parameters)."""
        self.open = True
        self.hooked = False         # a gradient hook has fired in this round
        self.ready = [False] * len(self.params)
        self.next_bucket = 0
        for bucket in self.buckets:
            bucket.pending = len(bucket.indices)
            bucket.work = None
        for i in unused:
            self.mark_ready(i, from_hook=False)

    def abandon(self):
        """Close a round in which no gradient arrived (a forward with grad mode on
        and no backward, e.g. an evaluation outside no_grad -- PyTorch allows it):
        wait for the collectives it started, which every rank issued alike, and
        leave every ``.grad`` untouched."""
        if self.used is not None:
            self.used[0].wait()
            self.used = None
        for bucket in self.buckets:
            if bucket.work is not None:
                bucket.work.wait()
                bucket.work = None
        self.open = False

    def unfinished(self):
        """Names of the parameters that got no gradient in the open round."""
        if not self.open:
            return []
        return [self.names[i] for i in range(len(self.params)) if not self.ready[i]]

    def mark_ready(self, i, from_hook=True):
        """Parameter ``i``'s gradient is final for this round: copy it into its
        bucket and launch every bucket whose turn has come."""
        self.hooked = self.hooked or from_hook
        if self.ready[i]:
            raise RuntimeError(
                f"DistributedDataParallel: expected to mark a variable ready only once; "
                f"parameter '{self.names[i]}' got a second gradient in one round (a "
                f"second backward() through the same forward, or a parameter shared "
                f"with another DDP model?). Run forward again before each backward.")
        self.ready[i] = True
        b, k = self.where[i]
        bucket = self.buckets[b]
        off = int(bucket.offsets[k])
        slot = bucket.flat._data[off:off + bucket.numels[k]]
        g = self.params[i].grad
        if g is None:
            slot[...] = 0
        elif not (self.as_view and np.shares_memory(g._data, slot)):
            np.copyto(slot, g._data.reshape(-1))
        bucket.pending -= 1
        # MPICH moves a started collective on only inside MPI calls: testing the
        # oldest running bucket here lets it progress while backward computes
        for b in range(self.next_bucket):
            work = self.buckets[b].work
            if work is not None and not work.is_completed():
                break
        while (self.next_bucket < len(self.buckets)
               and self.buckets[self.next_bucket].pending == 0):
            self._launch(self.buckets[self.next_bucket])
            self.next_bucket += 1
        if self.next_bucket == len(self.buckets):
            self.finish()

    def _launch(self, bucket):
        import tensorplay.distributed as dist
        flat = bucket.flat._data
        np.divide(flat, self.world_size, out=flat)   # average: divide, then sum
        bucket.work = dist.all_reduce(bucket.flat, group=self.group, async_op=True)

    def finish(self):
        """Wait for every bucket and write the averaged gradients to ``.grad``."""
        from tensorplay.autograd.grad_mode import no_grad
        used = None
        if self.used is not None:
            work, counts = self.used
            work.wait()
            used = counts.numpy()
            self.used = None
        moved = 0
        for bucket in self.buckets:
            bucket.work.wait()
            bucket.work = None
            moved += bucket.flat._data.nbytes
            for k, i in enumerate(bucket.indices):
                if used is not None and used[i] == 0:
                    continue                # unused on every rank: .grad untouched
                p = self.params[i]
                g = p.grad
                if g is not None and not self.as_view and g._data.flags.writeable:
                    off = int(bucket.offsets[k])      # in place: the optimiser's
                    np.copyto(g._data, bucket.flat._data[off:off + bucket.numels[k]]
                              .reshape(g._data.shape))  # references stay current
                    g._version[0] += 1
                    continue
                slot = bucket.view(k, p.shape)
                with no_grad():
                    p.grad = slot if self.as_view else slot.clone()
        self.bytes_last_round = moved
        self.open = False
