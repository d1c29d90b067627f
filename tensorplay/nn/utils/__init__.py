"""``tensorplay.nn.utils`` (PyTorch's ``torch.nn.utils``): gradient clipping and
flattening parameters into one vector, ``functional_call`` (stateless.py), and
variable-length sequences (rnn.py: PackedSequence, pack/pad)."""
from tensorplay.nn.utils.clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_
from tensorplay.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from tensorplay.nn.utils import rnn, stateless  # noqa: F401
from tensorplay.nn.utils.stateless import functional_call

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters", "functional_call", "stateless", "rnn"]
