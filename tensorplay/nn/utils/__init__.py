"""``tensorplay.nn.utils`` (PyTorch's ``torch.nn.utils``): gradient clipping and
flattening parameters into one vector, ``functional_call`` (stateless.py), and
variable-length sequences (rnn.py: PackedSequence, pack/pad)."""
from tensorplay.nn.utils.clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_
from tensorplay.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from tensorplay.nn.utils import rnn, stateless  # noqa: F401
from tensorplay.nn.utils.stateless import functional_call
from tensorplay._torch_names_nn import module_getattr as _module_getattr

# names torch.nn.utils has and this module lacks: the PyTorch hint (PEP 562)
__getattr__ = _module_getattr(__name__)

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters", "functional_call", "stateless", "rnn"]
