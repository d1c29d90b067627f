"""One flat vector from parameters and back (PyTorch's
``torch.nn.utils.convert_parameters``)."""
import tensorplay
from tensorplay._tensor import Tensor
from tensorplay.nn.modules._state import typename

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated in order: a 1-D tensor
    (differentiable; a copy).

    Raises:
        TypeError: not an iterable of Tensors.  RuntimeError: dtypes that differ
        (as ``cat``).
    """
    if isinstance(parameters, Tensor):
        raise TypeError("parameters_to_vector(): expected an iterable of Tensors, got a "
                        "Tensor (wrap it in a list)")
    vec = []
    for p in parameters:
        if not isinstance(p, Tensor):
            raise TypeError(f"parameters_to_vector(): expected Tensors, got {typename(p)}")
        vec.append(p.reshape(-1))
    return tensorplay.cat(vec)


def vector_to_parameters(vec, parameters):
    """Make each parameter's ``.data`` a slice of ``vec`` (shared storage, as
    PyTorch), in order.

    Raises:
        TypeError: ``vec`` not a Tensor.  RuntimeError: ``vec`` not 1-D, or its
        length differs from the parameters' total size (PyTorch ignores extra
        elements; tensorplay refuses, and changes nothing).
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected tensorplay.Tensor, but got: {typename(vec)}")
    params = list(parameters)
    if vec.ndim != 1:
        raise RuntimeError(f"vector_to_parameters(): expected a 1-D vec, got shape "
                           f"{list(vec.shape)}")
    total = sum(p.numel() for p in params)
    if vec.numel() != total:
        raise RuntimeError(f"vector_to_parameters(): vec has {vec.numel()} elements, the "
                           f"parameters {total}")
    pointer = 0
    for p in params:
        n = p.numel()
        p.data = vec[pointer:pointer + n].view_as(p).data
        pointer += n
