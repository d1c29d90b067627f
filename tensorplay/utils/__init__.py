"""Utilities (PyTorch's ``torch.utils``): ``hooks`` for now."""
