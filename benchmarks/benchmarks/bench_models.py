"""asv suite: whole workloads, timed (``time_``) and by peak memory (``peakmem_``).

* ``MLPStep``: the model of examples/train_digits.py, 64 -> 128 (ReLU) -> 10,
  batch 256, float32: forward, softmax cross-entropy and ``autograd.grad`` with
  respect to the four parameters.
* ``DeepChain``: 100 layers ``h = tanh(h @ W_i)``, width 128, batch 256, float32,
  forward and ``autograd.grad`` with respect to every ``W_i``: the graph keeps
  100 layers of saved activations alive until the backward pass frees them.

asv's ``peakmem_`` is the peak resident size of the benchmark's process, so it
includes the interpreter, numpy, tensorplay and the setup's arrays; compare it
across commits, not with other programs.
"""
import numpy as np

import tensorplay as tp

from .common import array, rng


def _weights(shapes):
    """Seeded float32 weights of the given (fan_in, fan_out) shapes, scaled by
    1/sqrt(fan_in) (tanh layers stay out of saturation), requiring grad."""
    r = rng()
    return [tp.from_numpy((r.standard_normal(s) / np.sqrt(s[0])).astype(np.float32))
            .requires_grad_() for s in shapes]


class MLPStep:
    """Forward + cross-entropy + ``autograd.grad`` of the 64-128-10 MLP, batch 256."""
    timeout = 30

    def setup(self):
        w1, w2 = _weights([(64, 128), (128, 10)])
        self.params = [w1, tp.zeros(128, requires_grad=True), w2,
                       tp.zeros(10, requires_grad=True)]
        self.x = array((256, 64), "float32")
        self.targets = tp.from_numpy(np.arange(256) % 10)

    def _step(self):
        w1, b1, w2, b2 = self.params
        logits = tp.relu(self.x @ w1 + b1) @ w2 + b2
        loss = tp.nn.functional.cross_entropy(logits, self.targets)
        return tp.autograd.grad(loss, self.params)

    def time_step(self):
        self._step()

    def peakmem_step(self):
        self._step()


class DeepChain:
    """100 layers of ``tanh(h @ W)`` (width 128, batch 256), forward + backward."""
    timeout = 120          # seconds; 100 layers are slow while the two thread pools fight
    layers = 100

    def setup(self):
        self.weights = _weights([(128, 128)] * self.layers)
        self.x = array((256, 128), "float32")

    def _forward_backward(self):
        h = self.x
        for w in self.weights:
            h = tp.tanh(h @ w)
        return tp.autograd.grad(h.sum(), self.weights)

    def time_forward_backward(self):
        self._forward_backward()

    def peakmem_forward_backward(self):
        self._forward_backward()
