"""``Flatten`` and ``Unflatten`` (PyTorch's ``torch.nn.modules.flatten``)."""
from tensorplay.nn.modules.module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flatten dims ``start_dim`` .. ``end_dim`` into one (``torch.nn.Flatten``;
    defaults keep the batch dim: (N, *) -> (N, prod(*)))."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expand dim ``dim`` into the shape ``unflattened_size`` (``torch.nn.Unflatten``).

    Raises:
        TypeError: ``dim`` not an int (a str names a dim in PyTorch; tensorplay
        has no named tensors), or ``unflattened_size`` not a tuple/list of ints.
    """

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TypeError("invalid argument type for dim parameter (tensorplay has no "
                            "named tensors: dim must be an int)")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError("unflattened_size must be tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        for idx, elem in enumerate(unflattened_size):
            if isinstance(elem, bool) or not isinstance(elem, int):
                raise TypeError("unflattened_size must be tuple of ints, but found element "
                                f"of type {type(elem).__name__} at pos {idx}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
