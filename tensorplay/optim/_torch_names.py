"""Public names of PyTorch 2.13.0's ``torch.optim`` and ``torch.optim.lr_scheduler``
(their ``__all__``), so that a name tensorplay lacks says "exists in PyTorch;
tensorplay does not implement it yet" rather than only "no attribute".

Generated once with ``python -c "import torch.optim as o; print(o.__all__,
o.lr_scheduler.__all__)"``; regenerate when moving to a newer PyTorch.  Data only.
"""

OPTIM = frozenset("""
ASGD Adadelta Adafactor Adagrad Adam AdamW Adamax LBFGS Muon NAdam Optimizer RAdam
RMSprop Rprop SGD SparseAdam lr_scheduler swa_utils swap_in_optimizer_params_and_state
""".split())

LR_SCHEDULER = frozenset("""
ChainedScheduler ConstantLR CosineAnnealingLR CosineAnnealingWarmRestarts CyclicLR
ExponentialLR LRScheduler LambdaLR LinearLR MultiStepLR MultiplicativeLR OneCycleLR
PolynomialLR ReduceLROnPlateau SequentialLR StepLR
""".split())


def missing(module, names, name):
    """The AttributeError for ``name`` missing from tensorplay's ``module``
    (``"optim"`` or ``"optim.lr_scheduler"``), saying whether PyTorch has it."""
    if name in names:
        return AttributeError(f"module 'tensorplay.{module}' has no attribute {name!r}: "
                              f"torch.{module}.{name} exists in PyTorch; tensorplay does "
                              f"not implement it yet")
    return AttributeError(f"module 'tensorplay.{module}' has no attribute {name!r}")
