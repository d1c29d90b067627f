"""Variable-length sequences for the recurrent layers (PyTorch's
``torch.nn.utils.rnn``): ``PackedSequence``, ``pack_padded_sequence``,
``pad_packed_sequence``, ``pack_sequence``, ``unpack_sequence``, ``pad_sequence``
and ``unpad_sequence``.

A packed sequence stores the valid steps of a batch time-major, the sequences
sorted longest first: ``data`` (sum of lengths, *) holds step 0 of every
sequence, then step 1 of those at least 2 long, ...; ``batch_sizes`` (T,) int64
says how many sequences are still running at each step.  ``sorted_indices[k]``
is the original batch index of the k-th longest sequence (``None`` when the
batch was already sorted), ``unsorted_indices`` its inverse.

Packing and padding are each one ``index_select`` on a flattened view, with the
row indices computed in numpy from the lengths, so gradients (and tangents)
flow through both as through any indexing op.
"""
from collections import namedtuple

import numpy as np

import tensorplay
from tensorplay._tensor import Tensor

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence",
           "invert_permutation"]

_PackedSequenceBase = namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices",
                                                     "unsorted_indices"])


def invert_permutation(permutation):
    """The inverse of a 1-D int64 permutation tensor (``None`` stays ``None``)."""
    if permutation is None:
        return None
    p = permutation.numpy()
    inv = np.empty_like(p)
    inv[p] = np.arange(p.size, dtype=p.dtype)
    return tensorplay.tensor(inv, dtype=tensorplay.int64)


class PackedSequence(_PackedSequenceBase):
    """A batch of variable-length sequences packed time-major (``torch.nn.utils.rnn.
    PackedSequence``), a named tuple ``(data, batch_sizes, sorted_indices,
    unsorted_indices)``.

    Build it with ``pack_padded_sequence`` or ``pack_sequence``, not by hand; as
    PyTorch, ``PackedSequence(data, batch_sizes, sorted_indices=None,
    unsorted_indices=None)`` works and fills ``unsorted_indices`` as the inverse of
    ``sorted_indices``.

    Fields:
        data (Tensor): (sum(lengths), *) the valid steps, time-major.
        batch_sizes (Tensor): (T,) int64, non-increasing, the running sequences per step.
        sorted_indices, unsorted_indices (Tensor or None): (B,) int64 permutations.

    Methods ``to``, ``double``, ``float``, ``long``, ``int``, ``cpu`` convert
    ``data`` only (the indices stay int64), returning ``self`` when nothing
    changes; ``half``, ``short``, ``char``, ``byte`` and ``cuda`` raise as for a
    Tensor (tensorplay has no float16/int16/int8/uint8 dtype and no CUDA).
    """
    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            # PyTorch's legacy form PackedSequence((data, batch_sizes))
            if not isinstance(data, (list, tuple)) or len(data) != 2:
                raise TypeError("PackedSequence(): expected data and batch_sizes, or a "
                                "(data, batch_sizes) pair")
            data, batch_sizes = data
        if not isinstance(data, Tensor) or not isinstance(batch_sizes, Tensor):
            raise TypeError(f"PackedSequence(): data and batch_sizes must be Tensors, got "
                            f"{type(data).__name__} and {type(batch_sizes).__name__}")
        if batch_sizes.dim() != 1 or batch_sizes.dtype != tensorplay.int64:
            raise TypeError(f"PackedSequence(): batch_sizes must be a 1-D int64 tensor, got "
                            f"{batch_sizes.dim()}-D {batch_sizes.dtype}")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """``data.to(*args, **kwargs)`` in a new PackedSequence (``self`` when the
        data is unchanged); the index tensors are kept as they are."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self, *args, **kwargs):
        """``self`` (the only device is the CPU)."""
        return self.to("cpu")

    def cuda(self, *args, **kwargs):
        """Raises as ``Tensor.cuda`` (no CUDA device)."""
        return self.data.cuda(*args, **kwargs)

    def double(self):
        return self.to(dtype=tensorplay.float64)

    def float(self):
        return self.to(dtype=tensorplay.float32)

    def half(self):
        """Raises as ``Tensor.half`` (no float16 dtype)."""
        return self.data.half()

    def long(self):
        return self.to(dtype=tensorplay.int64)

    def int(self):
        return self.to(dtype=tensorplay.int32)

    def short(self):
        return self.to(dtype=tensorplay.int16)

    def char(self):
        return self.to(dtype=tensorplay.int8)

    def byte(self):
        return self.to(dtype=tensorplay.uint8)

    def pin_memory(self):
        """``self`` (no pinned memory on a CPU-only library)."""
        return self

    def is_pinned(self):
        return False

    @property
    def is_cuda(self):
        return False


def _lengths_array(lengths, batch, op):
    """``lengths`` (list/tuple of ints or a 1-D tensor) as an int64 numpy array,
    checked: one per batch entry, each > 0."""
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.dim()}D cpu {lengths.dtype} tensor")
        arr = lengths.detach().numpy()
    else:
        try:
            arr = np.asarray(lengths)
        except ValueError:          # ragged nested lists
            arr = np.asarray(None)
        if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iubf"):
            raise TypeError(f"{op}(): lengths must be a 1-D sequence of ints or a 1-D "
                            f"int64 tensor, got {lengths!r}")
    arr = arr.astype(np.int64)
    if arr.shape[0] != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{arr.shape[0]} (batch_size={batch})")
    if batch and arr.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    return arr


def _batch_sizes(sorted_lengths):
    """Non-increasing lengths -> (T,) running-sequence counts."""
    T = int(sorted_lengths[0]) if sorted_lengths.size else 0
    return (sorted_lengths[None, :] > np.arange(T)[:, None]).sum(1).astype(np.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch: input (T, B, *) (or (B, T, *) with ``batch_first``)
    whose sequence ``b`` is valid for its first ``lengths[b]`` steps.

    Args:
        input (Tensor): the padded batch, any dtype; gradients flow to its valid steps.
        lengths (Tensor or list of int): (B,) lengths, each in [1, T].
        batch_first (bool): input is (B, T, *) (default False).
        enforce_sorted (bool): lengths must be non-increasing (default True, as
            PyTorch); with False the batch is sorted here and the permutation kept
            in ``sorted_indices`` so ``pad_packed_sequence`` restores the order.

    Returns:
        PackedSequence.

    Raises:
        RuntimeError: unsorted lengths with enforce_sorted, a length <= 0, a length
        greater than T (PyTorch reads past the input there), a count of lengths
        other than B, a lengths tensor that is not 1-D.  IndexError: input of fewer
        than 2 dims.  TypeError: lengths that are not integers.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"pack_padded_sequence(): input must be a Tensor, not "
                        f"{type(input).__name__}")
    if input.dim() < 2:
        raise IndexError(f"pack_padded_sequence(): input must have at least 2 dims (T, B, "
                         f"*), got {input.dim()}")
    if batch_first:
        input = input.transpose(0, 1)
    T, B = input.shape[0], input.shape[1]
    lens = _lengths_array(lengths, B, "pack_padded_sequence")
    if enforce_sorted:
        if B > 1 and np.any(lens[1:] > lens[:-1]):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        order = np.arange(B, dtype=np.int64)
        sorted_indices = None
    else:
        order = np.argsort(-lens, kind="stable").astype(np.int64)
        sorted_indices = tensorplay.tensor(order, dtype=tensorplay.int64)
    if B and lens.max() > T:
        raise RuntimeError(f"pack_padded_sequence(): every length must be at most the "
                           f"sequence dim of input ({T}), got a length of {lens.max()}")
    slens = lens[order]
    bs = _batch_sizes(slens)
    # packed row (t, k) = input[t, order[k]] for k < bs[t]: one gather on (T*B, *)
    rows = np.concatenate([t * B + order[:n] for t, n in enumerate(bs)]) if bs.size \
        else np.zeros(0, np.int64)
    flat = input.reshape((T * B,) + tuple(input.shape[2:]))
    data = flat.index_select(0, tensorplay.tensor(rows, dtype=tensorplay.int64))
    return PackedSequence(data, tensorplay.tensor(bs, dtype=tensorplay.int64), sorted_indices,
                          None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo ``pack_padded_sequence``: returns ``(padded, lengths)`` with padded
    (T, B, *) (``batch_first``: (B, T, *)) in the original batch order, the steps
    after each sequence's end set to ``padding_value``, and lengths (B,) int64.

    Args:
        sequence (PackedSequence): the batch.
        batch_first (bool): default False.
        padding_value (float): the fill (default 0.0).
        total_length (int, optional): pad to this T (at least the longest length),
            e.g. to get back the input's T under DataParallel-style splitting.

    Raises:
        TypeError: not a PackedSequence.  ValueError: total_length below the
        longest length (PyTorch's message).
    """
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"pad_packed_sequence(): sequence must be a PackedSequence, not "
                        f"{type(sequence).__name__}")
    data = sequence.data
    bs = sequence.batch_sizes.numpy().astype(np.int64)
    T = int(bs.shape[0])
    B = int(bs[0]) if T else 0
    if total_length is not None:
        if total_length < T:
            raise ValueError(f"Expected total_length to be at least the length of the "
                             f"longest sequence in input, but got total_length={total_length} "
                             f"and max sequence length being {T}")
        T_out = int(total_length)
    else:
        T_out = T
    unsorted = (sequence.unsorted_indices.numpy().astype(np.int64)
                if sequence.unsorted_indices is not None else np.arange(B, dtype=np.int64))
    slens = (bs[None, :] > np.arange(B)[:, None]).sum(1)          # sorted lengths (B,)
    offsets = np.concatenate([[0], np.cumsum(bs)[:-1]]).astype(np.int64)
    n = int(data.shape[0])
    # padded (t, j) = data[offsets[t] + u_j] when t < len(u_j), else the padding row n
    t_idx = np.arange(T_out)[:, None]
    col = unsorted[None, :]
    valid = t_idx < slens[col]
    rows = np.where(valid, offsets[np.minimum(t_idx, max(T - 1, 0))] + col, n)
    trailing = tuple(data.shape[1:])
    pad = tensorplay.full((1,) + trailing, padding_value, dtype=data.dtype)
    src = tensorplay.cat([data, pad], 0)
    out = src.index_select(0, tensorplay.tensor(rows.reshape(-1), dtype=tensorplay.int64))
    out = out.reshape((T_out, B) + trailing)
    if batch_first:
        out = out.transpose(0, 1)
    return out, tensorplay.tensor(slens[unsorted], dtype=tensorplay.int64)


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors (L_i, *): ``pack_padded_sequence(pad_sequence(
    sequences), lengths, enforce_sorted=enforce_sorted)``.

    Raises:
        RuntimeError: an empty list (PyTorch's message), unsorted lengths with
        enforce_sorted; as pad_sequence for mismatched shapes.
    """
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    lengths = [int(v.shape[0]) if isinstance(v, Tensor) and v.dim() else 0
               for v in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """Undo ``pack_sequence``: the list of tensors (L_i, *), in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return [x[:int(n)] for x, n in zip(padded.unbind(0), lengths.tolist())]


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Undo ``pad_sequence``: padded (T, B, *) (or (B, T, *)) and lengths (B,)
    to the list of tensors (lengths[b], *).

    Raises:
        RuntimeError: a count of lengths other than B, a length <= 0 or above T.
    """
    if not isinstance(padded_sequences, Tensor) or padded_sequences.dim() < 2:
        raise TypeError("unpad_sequence(): padded_sequences must be a Tensor of at least "
                        "2 dims")
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    B, T = padded_sequences.shape[0], padded_sequences.shape[1]
    lens = _lengths_array(lengths, B, "unpad_sequence")
    if B and lens.max() > T:
        raise RuntimeError(f"unpad_sequence(): every length must be at most the sequence "
                           f"dim ({T}), got {lens.max()}")
    return [seq[:int(n)] for seq, n in zip(padded_sequences.unbind(0), lens)]


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Pad tensors of shape (L_i, *) to the longest L and stack them:
    (L, B, *), or (B, L, *) with ``batch_first``.  Differentiable in the inputs.

    Args:
        sequences (list of Tensor): same trailing shape and dtype.
        batch_first (bool): batch dim first (default False, as PyTorch).
        padding_value (float): the fill (default 0).
        padding_side (str): 'right' (default) or 'left'.

    Raises:
        TypeError: not a non-empty sequence of Tensors.  ValueError: a bad
        padding_side.  RuntimeError: trailing shapes or dtypes that differ.
    """
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences or not all(isinstance(s, Tensor) for s in sequences):
        raise TypeError("pad_sequence(): expected a non-empty list of Tensors")
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    trailing = tuple(sequences[0].shape[1:])
    dtype = sequences[0].dtype
    for s in sequences:
        if s.ndim == 0 or tuple(s.shape[1:]) != trailing or s.dtype != dtype:
            raise RuntimeError(f"pad_sequence(): every sequence must be (L, "
                               f"{', '.join(map(str, trailing)) or ''}) of {dtype}, got "
                               f"{list(s.shape)} of {s.dtype}")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        extra = longest - s.shape[0]
        if extra:
            fill = tensorplay.full((extra,) + trailing, padding_value, dtype=dtype)
            s = tensorplay.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return tensorplay.stack(padded, 0 if batch_first else 1)
