"""``tensorplay.cuda``: there is no CUDA here; the queries PyTorch code makes before
choosing a device answer that (``is_available()`` is False), so
``device = "cuda" if tensorplay.cuda.is_available() else "cpu"`` picks the CPU."""

__all__ = ["is_available", "device_count", "is_initialized", "manual_seed",
           "manual_seed_all", "synchronize"]


def is_available():
    """False: tensorplay runs on the CPU only."""
    return False


def device_count():
    """0."""
    return 0


def is_initialized():
    """False."""
    return False


def manual_seed(seed):
    """Does nothing (there is no CUDA generator), as PyTorch without CUDA."""


def manual_seed_all(seed):
    """Does nothing, as ``manual_seed``."""


def synchronize(device=None):
    """Raises RuntimeError: there is no CUDA device to wait for."""
    raise RuntimeError("tensorplay.cuda.synchronize(): no CUDA device (tensorplay runs "
                       "on the CPU only)")
