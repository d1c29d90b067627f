"""``AdamW``: Adam with decoupled weight decay (PyTorch's ``torch.optim.AdamW``)."""
from tensorplay.optim.adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    r"""AdamW (Loshchilov & Hutter, 2019), PyTorch's ``torch.optim.AdamW``: Adam
    whose weight decay shrinks the parameter, ``p = p * (1 - lr * weight_decay)``,
    before the Adam update, instead of adding ``weight_decay * p`` to the gradient.

    Args:
        params (iterable): tensors or param-group dicts (see ``Optimizer``).
        lr (float or Tensor, optional): learning rate (default 1e-3).
        betas (Tuple[float, float], optional): default (0.9, 0.999).
        eps (float, optional): default 1e-8.
        weight_decay (float, optional): decoupled decay coefficient (default 1e-2,
            PyTorch's).
        amsgrad (bool, optional): the AMSGrad variant (default False).
        maximize (bool, optional): maximise the objective (default False).
        foreach, capturable, fused (optional): accepted and kept (see ``Adam``).
        differentiable (bool, optional): must be False.

    The groups hold ``decoupled_weight_decay=True`` (as PyTorch's, where AdamW is
    this subclass of Adam); state and errors are Adam's.
    """
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
