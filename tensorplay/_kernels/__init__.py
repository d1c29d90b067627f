"""Compiled kernels of tensorplay (Cython, float32/float64, OpenMP).

Private: the Python layer validates arguments and allocates outputs; see the
``# Design:`` block at the top of each ``.pyx`` / ``.pyx.tp`` file.
"""
