"""``pad_sequence`` (PyTorch's ``torch.nn.utils.rnn``): stack variable-length
sequences into one padded tensor for the recurrent layers.  Packed sequences
(``pack_padded_sequence``) are not supported: pad, and mask or pick the last
valid step instead."""
import tensorplay
from tensorplay._tensor import Tensor

__all__ = ["pad_sequence"]


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
