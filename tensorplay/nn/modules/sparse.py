"""``Embedding`` (PyTorch's ``torch.nn.modules.sparse``): a lookup table over
``nn.functional.embedding``; weight N(0, 1), the ``padding_idx`` row zero."""
import tensorplay
from tensorplay.nn import functional as F
from tensorplay.nn import init
from tensorplay.nn.modules.module import Module
from tensorplay.nn.parameter import Parameter

__all__ = ["Embedding"]


class Embedding(Module):
    """Rows of a learnt table, by integer index (``torch.nn.Embedding``).

    Args: ``num_embeddings, embedding_dim, padding_idx=None (its row starts at
    zero and gets no gradient; negative counts from the end), max_norm=None,
    norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
    _freeze=False, device=None, dtype=None``.

    Shape: input (*) integer indices, output (*, embedding_dim).

    Attributes:
        weight (Parameter): (num_embeddings, embedding_dim).

    Raises:
        AssertionError: padding_idx outside the table, or ``_weight`` of another
        shape (PyTorch's type).
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            if padding_idx < 0:
                padding_idx = num_embeddings + padding_idx
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(tensorplay.empty((num_embeddings, embedding_dim),
                                                     dtype=dtype, device=device),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and "
                                     "embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self):
        """N(0, 1), then the padding row zero."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self):
        if self.padding_idx is not None:
            with tensorplay.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm,
                           self.norm_type, self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = "{num_embeddings}, {embedding_dim}"
        if self.padding_idx is not None:
            s += ", padding_idx={padding_idx}"
        if self.max_norm is not None:
            s += ", max_norm={max_norm}"
        if self.norm_type != 2:
            s += ", norm_type={norm_type}"
        if self.scale_grad_by_freq is not False:
            s += ", scale_grad_by_freq={scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s.format(**self.__dict__)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False, sparse=False):
        """An Embedding whose weight is ``embeddings`` (2-D; shared storage, as
        PyTorch), frozen unless ``freeze=False``.

        Raises:
            AssertionError: embeddings not 2-D.
        """
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings,
                   _freeze=freeze, padding_idx=padding_idx, max_norm=max_norm,
                   norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


# --- layers9 ---
class EmbeddingBag(Module):
    """Sums, means or maxima of bags of rows of a learnt table, without building the
    per-bag rows (``torch.nn.EmbeddingBag``, over ``F.embedding_bag``).

    Args: ``num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
    scale_grad_by_freq=False, mode='mean' ('sum', 'mean', 'max'), sparse=False,
    _weight=None, include_last_offset=False, padding_idx=None (its row starts at zero;
    its positions are left out of the bags), device=None, dtype=None``.

    ``forward(input, offsets=None, per_sample_weights=None)``: 1-D ``input`` with
    ``offsets``, or 2-D ``input`` (one bag per row); output (B, embedding_dim).

    Attributes:
        weight (Parameter): (num_embeddings, embedding_dim), N(0, 1).

    Raises:
        AssertionError: padding_idx outside the table, ``_weight`` of another shape
        (PyTorch's type).
    """

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("padding_idx must be within num_embeddings")
            if padding_idx < 0:
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(tensorplay.empty((num_embeddings, embedding_dim),
                                                     dtype=dtype, device=device))
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and "
                                     "embedding_dim")
            self.weight = Parameter(_weight)
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset

    def reset_parameters(self):
        """N(0, 1), then the padding row zero."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with tensorplay.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        s = "{num_embeddings}, {embedding_dim}"
        if self.max_norm is not None:
            s += ", max_norm={max_norm}"
        if self.norm_type != 2:
            s += ", norm_type={norm_type}"
        if self.scale_grad_by_freq is not False:
            s += ", scale_grad_by_freq={scale_grad_by_freq}"
        s += ", mode={mode}"
        if self.padding_idx is not None:
            s += ", padding_idx={padding_idx}"
        return s.format(**{k: repr(v) for k, v in self.__dict__.items()})

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, mode="mean", sparse=False,
                        include_last_offset=False, padding_idx=None):
        """An EmbeddingBag whose weight is ``embeddings`` (2-D; shared storage, as
        PyTorch), frozen unless ``freeze=False``.

        Raises:
            AssertionError: embeddings not 2-D.
        """
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings,
                  max_norm=max_norm, norm_type=norm_type,
                  scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                  include_last_offset=include_last_offset, padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag


__all__ += ["EmbeddingBag"]
