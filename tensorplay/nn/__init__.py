"""Neural-network helpers.  This slice has only ``tensorplay.nn.functional``; modules
and optimisers (``nn.Module``, ``optim``) come in a later issue."""
from tensorplay.nn import functional  # noqa: F401
