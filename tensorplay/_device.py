"""``tensorplay.device``: where a tensor lives -- always the CPU here.

PyTorch code passes devices around (``torch.device("cuda" if
torch.cuda.is_available() else "cpu")``, ``zeros(3, device=x.device)``,
``x.to(device)``).  tensorplay accepts the same arguments so such code runs
unchanged on the CPU: a ``device`` can name any of PyTorch's device types, as
``torch.device`` can, but every function that takes ``device=`` refuses anything
other than the CPU with a clear error, and ``tensorplay.cuda.is_available()`` is
False.
"""
import builtins

__all__ = ["device"]

# PyTorch's device types (torch.device accepts these names)
_TYPES = ("cpu", "cuda", "mps", "xpu", "xla", "meta", "hpu", "mtia", "privateuseone",
          "ipu", "vulkan", "ve", "lazy", "fpga", "maia", "mkldnn", "opengl", "opencl",
          "ideep", "hip", "msnpu")


class device:
    """A device, as ``torch.device``: ``device("cpu")``, ``device("cpu:0")``,
    ``device("cuda", 1)``, ``device(other_device)``.

    Attributes:
        type (str): ``"cpu"``, ``"cuda"``, ...
        index (int or None): the device ordinal, if one was given.

    Compares equal to another device of the same type and index, and to the
    string that names it (``device("cpu") == "cpu"``).

    Raises:
        RuntimeError: an unknown device type or a malformed string (as PyTorch).
        TypeError: an argument that is neither a string, a device nor an int.
    """
    __slots__ = ("type", "index")

    def __init__(self, type, index=None):   # noqa: A002  (PyTorch's parameter name)
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device(): index given with a device object")
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, builtins.int) and not isinstance(type, builtins.bool):
            # PyTorch: a bare ordinal means the accelerator; there is none here
            raise RuntimeError(f"device({type}): an ordinal alone names an accelerator "
                               f"device; tensorplay has only the CPU (use 'cpu')")
        if not isinstance(type, str):
            raise TypeError(f"device(): expected a string, a device or an int, "
                            f"got {builtins.type(type).__name__}")
        name, sep, ordinal = type.partition(":")
        if name not in _TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start "
                               f"of device string: {type}")
        if sep:
            if index is not None:
                raise RuntimeError(f"device(): type {type!r} already has an index, "
                                   f"and index={index} was given too")
            if not ordinal.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = builtins.int(ordinal)
        if index is not None:
            if isinstance(index, builtins.bool) or not isinstance(index, builtins.int) \
                    or index < 0:
                raise RuntimeError(f"Device index must not be negative (got {index!r})"
                                   if isinstance(index, builtins.int) else
                                   f"device(): index must be an int, got {index!r}")
        self.type, self.index = name, index

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, TypeError):
                return False
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (device, (self.type, self.index))


CPU = device("cpu")


def check(dev, op):
    """Accept ``None``, ``"cpu"``, ``"cpu:0"``, ``device("cpu")`` (and a torch.device
    of the CPU); raise for anything else, naming ``op``.

    Raises:
        RuntimeError: a device that is not the CPU.
        TypeError: an argument that is not a device at all.
    """
    if dev is None or dev is CPU:
        return
    if isinstance(dev, device):
        d = dev
    elif isinstance(dev, str) or (builtins.type(dev).__name__ == "device"
                                  and hasattr(dev, "type")):    # torch.device and the like
        try:
            d = device(str(dev))
        except RuntimeError:
            d = None                            # not a device string: said below
    elif isinstance(dev, builtins.int) and not isinstance(dev, builtins.bool):
        d = None
    else:
        raise TypeError(f"{op}(): argument 'device' must be a device or a string, "
                        f"not {builtins.type(dev).__name__}")
    if d is None or d.type != "cpu" or d.index not in (None, 0):
        raise RuntimeError(f"{op}(): tensorplay tensors live on the CPU only; expected "
                           f"the device 'cpu', got {str(dev)!r}")
