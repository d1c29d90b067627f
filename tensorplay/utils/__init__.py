"""Utilities (PyTorch's ``torch.utils``): ``hooks`` and ``data`` (datasets,
samplers, ``DataLoader``; imported on first use)."""


def __getattr__(name):
    if name == "data":
        import importlib
        return importlib.import_module("tensorplay.utils.data")    # also binds it here
    raise AttributeError(f"module 'tensorplay.utils' has no attribute {name!r}")
