"""Saving and loading tensors and nested containers: ``save`` and ``load``.

The file format is safetensors (Hugging Face's format, specified in the README of
github.com/huggingface/safetensors), so the files open in any safetensors reader
and any plain safetensors file opens here:

``8 bytes``
    N, the length of the header, an unsigned 64-bit little-endian integer.
``N bytes``
    The header: a UTF-8 JSON object that starts with ``{``, padded at the end
    with spaces (tensorplay pads to a multiple of 8 bytes, as the reference
    writer does, so the data starts aligned).  One entry per tensor,
    ``"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}``,
    with byte offsets into the data section, and optionally ``"__metadata__"``,
    an object of string values.
``the rest``
    The data section: each tensor's elements in C (row-major) order,
    little-endian, the tensors back to back with no gaps and nothing after the
    last one.

dtypes: ``F32`` float32, ``F64`` float64, ``I32`` int32, ``I64`` int64 and ``BOOL``
(one byte, 0 or 1) -- every dtype tensorplay has.  The other safetensors dtypes
(F16, BF16, U8, ...) are refused on load with a RuntimeError: tensorplay has no
exact equivalent for them.

What tensorplay adds, in ``__metadata__`` (so other readers ignore it): the key
``"tensorplay"`` holds a JSON string

``{"version": 1, "tensors": [{"name", "dtype", "shape", "requires_grad", "crc32"}, ...],
"tree": node}``

where ``crc32`` is ``zlib.crc32`` of the tensor's bytes and ``tree`` describes the
saved object: ``["tensor", i]`` (entry ``i`` of ``tensors``), ``["dict", [[key,
node], ...]]`` and ``["odict", ...]`` (``collections.OrderedDict``; a key is a JSON
string or integer, the key's own type), ``["list", [node, ...]]``, ``["tuple",
[node, ...]]``, ``["int", n]``, ``["bool", b]``, ``["str", s]``, ``["none"]`` and
``["float", "<16 hex digits>"]`` (the IEEE-754 double, little-endian, so nan,
inf and -0.0 survive exactly).  The key ``"tensorplay.crc32"`` holds the CRC32 of
that string (its UTF-8 bytes) in decimal, so a corrupted leaf value or key is
caught like corrupted tensor bytes.

Tensor names are the path of keys and indices to the tensor joined with ``.``
(``"state.0.exp_avg"``; a bare Tensor is ``"tensor"``), made unique with a
``#k`` suffix where two paths would collide.  The names are for other readers:
tensorplay finds its tensors through ``tree``.

Not preserved (as documented for ``save``): storage shared between tensors
(views, one tensor saved twice: each is written separately and loads as its own
tensor), strides (every tensor is written contiguous), ``grad``, ``grad_fn``
(a saved non-leaf loads as a leaf), forward-mode tangents, and container types
other than dict, OrderedDict, list and tuple (refused on save).

Safety: nothing in a file is ever executed -- no pickle, only JSON and raw bytes
-- and ``load`` checks the whole file (lengths, JSON, dtypes, shapes, offsets,
CRCs, references) before it returns anything; a file that fails a check raises
RuntimeError naming the file and the problem.
"""
import collections
import errno
import io
import json
import os
import re
import stat
import struct
import time
import zlib

import numpy as np

from tensorplay._tensor import Tensor

__all__ = ["save", "load"]

# safetensors dtype name -> little-endian numpy dtype, for the dtypes tensorplay has
_ST_TO_NP = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "I32": np.dtype("<i4"),
             "I64": np.dtype("<i8"), "BOOL": np.dtype("?")}
_NP_KIND_TO_ST = {("f", 4): "F32", ("f", 8): "F64", ("i", 4): "I32", ("i", 8): "I64",
                  ("b", 1): "BOOL"}
# The reference implementation refuses headers over 100 MB (a hostile length
# must not make the reader allocate without bound); so does tensorplay.
MAX_HEADER_BYTES = 100 * 1024 * 1024
# Nesting depth of saved containers; deeper objects are refused on save, and a
# file claiming more is refused on load (no recursion without bound).
MAX_DEPTH = 200
_FORMAT_VERSION = 1
_META_KEY = "tensorplay"
_META_CRC_KEY = "tensorplay.crc32"
_HEX16 = re.compile(r"[0-9a-f]{16}\Z")
_CHUNK = 1 << 24           # bytes per read when the file's size is not known
# How long save() waits for a raw non-blocking file object that accepts nothing
# (write() -> None, "would block") before it gives up with RuntimeError.
_WRITE_STALL_SECONDS = 10.0
_CPU_NAMES = ("cpu", "cpu:0")


# ---------------------------------------------------------------- save
def save(obj, f):
    """Save a Tensor, or nested containers of Tensors and plain values, to ``f``.

    Args:
        obj: a Tensor, or dicts (keys str or int, order kept), ``OrderedDict``,
            lists and tuples nested to at most 200 levels, whose leaves are
            Tensors, int, float, bool, str or None -- e.g. a model's
            ``{"w1": Tensor, ...}`` or an optimizer state_dict
            ``{"state": {0: {...}}, "param_groups": [{"params": [0, 1], "lr": 0.1}]}``.
        f (str, os.PathLike or binary file object): where to write.  A path to a
            regular file, or one that does not exist yet, is written atomically:
            into a temporary file in the same directory, flushed to disk, then
            renamed over ``f`` (``os.replace``), so a save that fails or is
            interrupted leaves the old file (or none), never half of one.  An
            existing file must be writable, as for ``open(f, "wb")``; its mode is
            kept (owner, ACLs and other hard links are not: the name points to a
            new file, and another hard link keeps the old contents).  When the
            directory does not let a temporary file be made (or renamed) but the
            existing file is writable, the file is written in place, as
            ``torch.save`` does -- not atomic.  Anything else (a FIFO, a device
            such as ``/dev/null``, ``/dev/stdout``) is opened and written through,
            never replaced.  A file object is written from its current position,
            as is; a raw one may write less than asked (the rest is retried), and
            a non-blocking one that would block is retried for up to 10 s without
            progress, then RuntimeError (the file is then incomplete).

    Each tensor's bytes are copied once when ``save`` starts (memory: one extra
    copy of the tensors until the save returns) and its CRC32 is computed from that
    copy, so a tensor updated by another thread during the save gives a file with
    a mix of old and new values that loads, never one that fails its CRC.

    The format is safetensors (see the module docstring): any safetensors reader
    gets the tensors; ``tensorplay.load`` also gets the nesting, the plain values,
    each tensor's ``requires_grad`` and checks a CRC32 per tensor.  Each tensor is
    stored contiguous with its dtype and shape exactly (nan payloads and -0.0
    included).  Not preserved: storage shared between tensors (views, a tensor
    saved twice -- each is saved separately and loads as its own tensor), strides,
    ``grad``, ``grad_fn`` (a non-leaf loads as a leaf) and tangents.  PyTorch's
    ``torch.save`` pickles and keeps sharing; this format trades that for files
    that run no code when loaded.

    Raises:
        TypeError: a value of an unsupported type (named with its path in ``obj``),
            a key that is not str or int, or ``f`` that is neither a path nor a
            binary file object.
        ValueError: nesting deeper than 200 levels, a container holding itself,
            an int with more digits than Python converts to text
            (``sys.get_int_max_str_digits()``), or plain values and names that make
            the header larger than ``load`` accepts (100 MB) -- all raised before
            ``f`` is touched.
        RuntimeError: a file object whose ``write`` makes no progress (returns 0,
            or keeps returning None) or returns a nonsense count.
        OSError: from the file system (the temporary file is removed), e.g.
            PermissionError for an existing file that is not writable.
    """
    tensors = []          # (name, Tensor data as contiguous little-endian ndarray)
    records = []
    names = _Names()
    tree = _encode(obj, (), tensors, records, names, 0, set())
    meta_str = json.dumps({"version": _FORMAT_VERSION, "tensors": records, "tree": tree},
                          separators=(",", ":"), allow_nan=False)
    metadata = {_META_KEY: meta_str,
                _META_CRC_KEY: str(zlib.crc32(meta_str.encode("utf-8")))}
    # Largest items first (the reference writer's order), so every tensor's
    # offset is a multiple of its item size when the data section is aligned.
    order = sorted(range(len(tensors)), key=lambda i: -tensors[i][1].itemsize)
    header = {"__metadata__": metadata}
    offset = 0
    for i in order:
        name, arr = tensors[i]
        header[name] = {"dtype": records[i]["dtype"], "shape": records[i]["shape"],
                        "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    hbytes = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    hbytes += b" " * (-(8 + len(hbytes)) % 8)
    is_path = isinstance(f, (str, os.PathLike))
    if not is_path and not hasattr(f, "write"):
        raise TypeError(f"save(): f must be a path (str or os.PathLike) or a binary file "
                        f"object, got {type(f).__name__}")
    if len(hbytes) > MAX_HEADER_BYTES:
        # load() refuses such a header (as the reference reader does), so a file
        # written anyway could never be read back: refuse before touching f.
        raise ValueError(
            f"save(): the header for {_target(f)} would be {len(hbytes)} bytes, more than "
            f"the {MAX_HEADER_BYTES} that load() (and other safetensors readers) accept; "
            f"plain values (int, float, str, None) and tensor names are stored in the "
            f"header -- store large data, such as long lists of numbers, as tensors")
    chunks = [struct.pack("<Q", len(hbytes)) + hbytes]
    chunks += [tensors[i][1].reshape(-1).view(np.uint8) for i in order]

    if is_path:
        _write_path(os.fspath(f), chunks)
    else:
        if isinstance(f, io.TextIOBase):
            raise TypeError("save(): f is a text-mode file; open it in binary mode "
                            "('wb')")
        for c in chunks:
            _write_all(f, c)


def _target(f):
    """How an error names ``f``: the path, a file object's name, or the object."""
    if isinstance(f, (str, os.PathLike)):
        return repr(os.fspath(f))
    name = getattr(f, "name", f)
    return f"file descriptor {name}" if type(name) is int else repr(name)


def _encode(obj, path, tensors, records, names, depth, active):
    """The tree node for ``obj``, appending its tensors to ``tensors``/``records``."""
    if depth > MAX_DEPTH:
        raise ValueError(f"save(): objects nested deeper than {MAX_DEPTH} levels are not "
                         f"supported (at {_path_str(path)})")
    if isinstance(obj, Tensor):         # a subclass is saved (and loads) as a Tensor
        arr = obj._data
        st = _NP_KIND_TO_ST[(arr.dtype.kind, arr.dtype.itemsize)]
        # A snapshot, C order, little-endian: the CRC below and the bytes written
        # later are the same bytes even if another thread writes the tensor
        # meanwhile (np.array, not ascontiguousarray, which makes 0-d arrays 1-d).
        arr = np.array(arr, dtype=_ST_TO_NP[st], order="C", copy=True)
        # The name must be valid UTF-8 for other readers (the safetensors library
        # refuses a JSON escape of a lone surrogate such as "\ud800"): such code
        # points are spelled as backslash escapes.  Only the name changes;
        # tensorplay finds the tensor, and the exact key, through the tree.
        name = ".".join(str(p) for p in path) or "tensor"
        name = name.encode("utf-8", "backslashreplace").decode("utf-8")
        name = _unique_name(name, names)
        tensors.append((name, arr))
        records.append({"name": name, "dtype": st, "shape": list(arr.shape),
                        "requires_grad": bool(obj._requires_grad),
                        "crc32": zlib.crc32(arr.reshape(-1).view(np.uint8))})
        return ["tensor", len(records) - 1]
    t = type(obj)
    if t is bool:
        return ["bool", obj]
    if t is int:
        if obj.bit_length() > 64:
            try:
                str(obj)
            except ValueError as e:         # sys.get_int_max_str_digits()
                raise ValueError(f"save(): the int at {_path_str(path)} cannot be written "
                                 f"as JSON text ({e}); store it as a str, or raise the "
                                 f"limit with sys.set_int_max_str_digits()") from None
        return ["int", obj]
    if t is float:
        return ["float", struct.pack("<d", obj).hex()]
    if t is str:
        return ["str", obj]
    if obj is None:
        return ["none"]
    if t in (dict, collections.OrderedDict, list, tuple):
        if id(obj) in active:
            raise ValueError(f"save(): the object contains itself (at {_path_str(path)})")
        active.add(id(obj))
        try:
            if t is dict or t is collections.OrderedDict:
                items = []
                for k, v in obj.items():
                    if type(k) not in (str, int):
                        raise TypeError(f"save(): dict keys must be str or int, got "
                                        f"{type(k).__name__} key {k!r} at {_path_str(path)}")
                    items.append([k, _encode(v, path + (k,), tensors, records, names,
                                             depth + 1, active)])
                return ["dict" if t is dict else "odict", items]
            return ["list" if t is list else "tuple",
                    [_encode(v, path + (i,), tensors, records, names, depth + 1, active)
                     for i, v in enumerate(obj)]]
        finally:
            active.discard(id(obj))
    raise TypeError(f"save(): cannot save a value of type {t.__name__} at "
                    f"{_path_str(path)}; supported are Tensor, dict, OrderedDict, list, "
                    f"tuple, int, float, bool, str and None")


def _write_all(f, chunk):
    """``f.write`` until all of ``chunk`` is written.

    A raw file (``io.RawIOBase``: FileIO, a socket file) may write less than asked,
    and returns None when a non-blocking one would block -- nothing written; a
    buffered one raises BlockingIOError with ``characters_written``.  All of these
    are retried, for at most ``_WRITE_STALL_SECONDS`` without progress.  Any other
    object returning None is taken to have written everything (file-likes that do
    not return a count).  0 bytes written, or a count that is not an int between 0
    and the length, raises RuntimeError: looping would never end.
    """
    mv = memoryview(chunk).cast("B")
    raw = isinstance(f, io.RawIOBase)
    stalled_since = None
    pause = 0.0005
    while len(mv):
        try:
            n = f.write(mv)
        except BlockingIOError as e:
            n = e.characters_written or None        # 0: nothing accepted
        else:
            if n is None and not raw:
                return
        if n is None:
            now = time.monotonic()
            if stalled_since is None:
                stalled_since = now
            elif now - stalled_since > _WRITE_STALL_SECONDS:
                raise RuntimeError(
                    f"save(): {_target(f)}: f.write() accepted nothing for "
                    f"{_WRITE_STALL_SECONDS:g} s (a non-blocking file that would block), "
                    f"{len(mv)} bytes of this part unwritten; the file is incomplete")
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
            continue
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= len(mv):
            raise RuntimeError(f"save(): {_target(f)}: f.write() of {len(mv)} bytes "
                               f"returned {n!r}, expected a count from 0 to {len(mv)}")
        if n == 0:
            raise RuntimeError(f"save(): {_target(f)}: f.write() of {len(mv)} bytes wrote "
                               f"0 bytes; the file is incomplete")
        stalled_since = None
        pause = 0.0005
        mv = mv[n:]


def _path_str(path):
    return "obj" + "".join(f"[{p!r}]" for p in path)


class _Names(set):
    """The tensor names taken so far, and per base name the last ``#k`` tried, so
    that many tensors whose paths join to one name cost linear time, not quadratic."""

    def __init__(self):
        super().__init__()
        self.last = {}


def _unique_name(base, names):
    name = base if base != "__metadata__" else "__metadata__#1"
    k = names.last.get(base, 1)
    while name in names:
        k += 1
        name = f"{base}#{k}"
    names.last[base] = k
    names.add(name)
    return name


def _write_path(path, chunks):
    """Write ``chunks`` to the file named ``path``: atomically for a regular file
    (or a new one), through ``open(path, "wb")`` for anything else."""
    if os.fspath(path) in ("", b""):
        raise FileNotFoundError(errno.ENOENT, "save(): the file name is empty", path)
    try:
        st = os.stat(path)                 # follows symlinks, as open() does
    except FileNotFoundError:
        st = None
    fd = _own_fd(path)
    if fd is not None:
        # /dev/stdout, /dev/fd/N, /proc/self/fd/N: write to that descriptor (a
        # duplicate, sharing its file offset), so output around the save stays in
        # order and a redirected log is neither replaced nor truncated
        _write_fd(fd, chunks)
        return
    if st is not None and not stat.S_ISREG(st.st_mode):
        # A FIFO, a device (/dev/null)...: replacing it would destroy it (as root,
        # /dev/null itself); write to it as torch.save does.
        _write_through(path, chunks, sync=False)
        return
    if st is not None and not os.access(path, os.W_OK, effective_ids=
                                        os.access in os.supports_effective_ids):
        # what open(path, "wb") would say; the rename would bypass the protection
        raise PermissionError(errno.EACCES, f"save(): {path!r} exists and is not writable "
                                  f"(Permission denied)", path)
    try:
        _write_atomic(path, chunks, st)
    except _NoTempFile:
        if st is None:
            raise PermissionError(errno.EACCES, f"save(): cannot create {path!r}: the directory "
                                      f"is not writable (Permission denied)", path) from None
        # the directory is read-only but the file is writable: write in place
        _write_through(path, chunks, sync=True)


def _own_fd(path):
    """The descriptor number when ``path`` names one of this process's open files
    (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``, ``/proc/self/fd/N``), else None."""
    p = os.path.abspath(os.fsdecode(path))
    named = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
    if p in named:
        return named[p]
    for prefix in ("/dev/fd/", "/proc/self/fd/", f"/proc/{os.getpid()}/fd/"):
        rest = p[len(prefix):]
        if p.startswith(prefix) and rest.isdigit():
            return int(rest)
    return None


def _write_fd(fd, chunks):
    import sys
    for stream in (sys.stdout, sys.stderr):     # keep Python's buffered output in order
        try:
            if stream is not None and stream.fileno() == fd:
                stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    with os.fdopen(os.dup(fd), "wb", closefd=True) as out:
        for c in chunks:
            out.write(c)


def _write_through(path, chunks, sync):
    with open(path, "wb") as out:
        for c in chunks:
            out.write(c)
        if sync:
            out.flush()
            os.fsync(out.fileno())


class _NoTempFile(Exception):
    """The directory refuses a temporary file next to the target, or the rename."""


def _write_atomic(path, chunks, st):
    import tempfile            # here, not at import: it is slow to import
    path = os.path.realpath(path)      # through a symlink, as open() would write
    directory = os.path.dirname(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=directory,
                                   prefix="." + os.path.basename(path) + ".",
                                   suffix=".tmp")
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, f"save(): cannot create {path!r}: no "
                                              f"directory {directory!r}", path) from None
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        raise _NoTempFile from None
    try:
        if st is not None:
            mode = st.st_mode & 0o7777                 # keep an existing file's mode
        else:
            mode = 0o666 & ~_umask()                   # what open() would have given
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as out:
            fd = None
            for c in chunks:
                out.write(c)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.replace(tmp, path)
        except OSError as e:
            # EBUSY: a bind-mounted file; EXDEV, EPERM (sticky directory): the
            # name cannot be replaced, but the file itself may still be written
            if st is not None and e.errno in (errno.EBUSY, errno.EXDEV, errno.EPERM,
                                              errno.EACCES):
                raise _NoTempFile from None
            raise
    except BaseException:
        if fd is not None:
            os.close(fd)
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:                       # make the rename itself durable (POSIX)
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _umask():
    """The process umask, read without changing it (Linux), else 0o022."""
    try:
        with open("/proc/self/status") as st:
            for line in st:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


# ---------------------------------------------------------------- load
def load(f, map_location=None, weights_only=True):
    """Load what ``save`` wrote, or any safetensors file, from ``f``.

    Args:
        f (str, os.PathLike or binary file object): the file; a file object is read
            from its current position to its end.  A path that is not a regular
            file (a FIFO, ``/dev/stdin``, a ``/proc`` file) is read as a stream:
            its reported size is not trusted.
        map_location (None, ``"cpu"``, ``"cpu:0"`` or a device object whose
            ``str`` is one of those, e.g. ``torch.device("cpu")``): where tensors
            go; tensorplay has only the CPU (PyTorch's argument, kept for code
            written for ``torch.load``).  Dicts and callables are refused
            (TypeError): with one device there is nothing to map.
        weights_only (bool): accepted for ``torch.load`` compatibility.  The format
            holds only tensors and plain values and loading never runs code, so
            True and False load the same thing.

    Returns:
        The saved object, with its container types (dict, OrderedDict, list,
        tuple), key types and order; each tensor a fresh contiguous leaf with its
        own storage and the saved dtype, shape, values and ``requires_grad``.  A
        safetensors file written by another tool (no tensorplay metadata) loads as
        a flat dict ``{name: Tensor}`` in the order of the data.

    Raises:
        RuntimeError: the file is not a valid file of this format -- header length
            out of bounds, invalid UTF-8 or JSON, duplicate names, unknown dtype,
            bad shape or offsets (out of order, overlapping, gaps, not matching
            dtype and shape), bytes missing or left over, BOOL bytes other than 0
            or 1, a CRC mismatch, tensorplay metadata that is malformed or refers to
            tensors that are not there -- with the file's name and the problem.
            Nothing is returned in that case.  Also ``map_location`` naming another
            device.
        TypeError: ``f`` neither a path nor a binary file object, or an unsupported
            ``map_location``.
        OSError: from the file system (e.g. FileNotFoundError).
    """
    if map_location is not None:
        if isinstance(map_location, str):
            where = map_location
        elif hasattr(map_location, "type") and not callable(map_location):
            where = str(map_location)          # torch.device("cpu") and the like
        else:
            raise TypeError(f"load(): map_location must be None, 'cpu', 'cpu:0' or a "
                            f"device whose str() is one of those, got "
                            f"{type(map_location).__name__} (tensorplay has only the "
                            f"CPU, so there is nothing to map)")
        if where not in _CPU_NAMES:
            raise RuntimeError(f"load(): map_location={map_location!r}: tensorplay only "
                               f"has the 'cpu' device")
    if not isinstance(weights_only, bool):
        raise TypeError(f"load(): weights_only must be a bool, got "
                        f"{type(weights_only).__name__}")
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            # st_size means nothing for a FIFO or a device, and /proc files are
            # "regular" files of size 0: those are read as streams (a truly
            # empty file then fails as truncated, which it is)
            size = st.st_size if stat.S_ISREG(st.st_mode) and st.st_size else None
            return _Reader(fh, repr(path), size).load()
    if not hasattr(f, "read"):
        raise TypeError(f"load(): f must be a path (str or os.PathLike) or a binary file "
                        f"object, got {type(f).__name__}")
    if isinstance(f, io.TextIOBase):
        raise TypeError("load(): f is a text-mode file; open it in binary mode ('rb')")
    return _Reader(f, repr(getattr(f, "name", f)), _remaining(f)).load()


def _remaining(f):
    """Bytes from the current position to the end, or None when not seekable."""
    try:
        if not f.seekable():
            return None
        pos = f.tell()
        end = f.seek(0, os.SEEK_END)
        f.seek(pos)
        return end - pos
    except (AttributeError, OSError, ValueError):
        return None


class _Corrupt(Exception):
    """A validation failure inside _Reader (turned into RuntimeError by load)."""


def _check(cond, msg):
    if not cond:
        raise _Corrupt(msg)


def _is_int(x):
    return type(x) is int


class _Reader:
    """One load: reads and checks the header, then the data, then builds the object."""

    def __init__(self, f, label, size):
        self.f = f
        self.label = label
        self.size = size        # bytes available from the start, or None

    def load(self):
        try:
            return self._load()
        except _Corrupt as e:
            raise RuntimeError(f"load(): {self.label} is not a valid tensorplay/"
                               f"safetensors file: {e}") from None

    def _read_exact(self, n, what):
        """Exactly n bytes, read in bounded chunks (a lying length can't make this
        allocate more than the file holds)."""
        parts = []
        got = 0
        while got < n:
            b = self.f.read(min(n - got, _CHUNK))
            if not isinstance(b, (bytes, bytearray)):
                raise TypeError(f"load(): f.read() returned {type(b).__name__}, not "
                                f"bytes; open the file in binary mode ('rb')")
            if not b:
                raise _Corrupt(f"file truncated: {what} needs {n} bytes, only {got} "
                               f"present")
            parts.append(b)
            got += len(b)
        return b"".join(parts)

    def _load(self):
        raw = self._read_exact(8, "the header length")
        (n,) = struct.unpack("<Q", raw)
        _check(2 <= n <= MAX_HEADER_BYTES,
               f"header length {n} is out of bounds (expected 2 to {MAX_HEADER_BYTES})")
        if self.size is not None:
            _check(8 + n <= self.size, f"header length {n} is more than the "
                                       f"{self.size - 8} bytes after it in the file")
        hbytes = self._read_exact(n, "the header")
        entries, metadata = self._parse_header(hbytes)
        data_len = entries[-1][4] if entries else 0
        if self.size is not None:
            have = self.size - 8 - n
            _check(have >= data_len, f"file truncated: the header describes {data_len} "
                                     f"bytes of data, the file has {have}")
            _check(have == data_len, f"{have - data_len} bytes after the end of the data "
                                     f"(the header describes {data_len})")
        spec = self._parse_metadata(metadata, entries)
        # Size unknown (a stream): read the data first, in bounded chunks, so that
        # a header claiming more than the stream holds allocates nothing.
        blob = None if self.size is not None else \
            memoryview(self._read_exact(data_len, "the data"))
        arrays = {}
        crcs = {}
        for name, dt, shape, begin, end in entries:
            try:
                arr = np.empty(shape, dt)
            except (ValueError, MemoryError, OverflowError) as e:
                raise _Corrupt(f"tensor {name!r}: shape {list(shape)} cannot be "
                               f"allocated ({e})") from None
            buf = arr.reshape(-1).view(np.uint8)
            if blob is None:
                self._read_into(buf, name)
            elif end > begin:
                buf[:] = np.frombuffer(blob[begin:end], np.uint8)
            crcs[name] = zlib.crc32(buf)       # of the bytes as stored (little-endian)
            if dt.kind == "b":
                _check(buf.size == 0 or int(buf.max()) <= 1,
                       f"tensor {name!r}: BOOL bytes must be 0 or 1")
            if not dt.isnative:
                arr = arr.astype(dt.newbyteorder("="))
            arrays[name] = arr
        extra = self.f.read(1)
        _check(not extra, f"bytes after the end of the data (the header describes "
                          f"{data_len})")
        if spec is None:
            out = {}
            for name, *_ in entries:
                out[name] = Tensor._wrap(arrays[name])
            return out
        records, tree, recs = spec
        for name, rec in records.items():
            _check(crcs[name] == rec["crc32"],
                   f"tensor {name!r}: CRC32 mismatch (stored {rec['crc32']}, the data "
                   f"gives {crcs[name]}): the data is corrupted")
        tensors = []
        for rec in recs:
            t = Tensor._wrap(arrays[rec["name"]])
            t._requires_grad = rec["requires_grad"]
            tensors.append(t)
        return _decode(tree, tensors)

    def _read_into(self, buf, name):
        mv = memoryview(buf)
        got = 0
        n = len(mv)
        readinto = getattr(self.f, "readinto", None)
        while got < n:
            if readinto is not None:
                k = readinto(mv[got:min(n, got + _CHUNK)])
            else:
                b = self.f.read(min(n - got, _CHUNK))
                k = len(b) if b else 0
                mv[got:got + k] = b
            if not k:
                raise _Corrupt(f"file truncated in the data of tensor {name!r}")
            got += k

    def _parse_header(self, hbytes):
        """Header bytes -> (entries sorted by offset, metadata or None); each entry
        (name, numpy dtype, shape, begin, end)."""
        _check(hbytes[:1] == b"{", "the header does not start with '{'")
        try:
            text = hbytes.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _Corrupt(f"the header is not valid UTF-8 ({e})") from None
        header = _json_object(text, "the header")
        metadata = None
        entries = []
        for name, info in header.items():
            if name == "__metadata__":
                if info is None:            # the reference reader's "no metadata"
                    continue
                _check(isinstance(info, dict) and
                       all(isinstance(v, str) for v in info.values()),
                       "__metadata__ must be an object of string values")
                metadata = info
                continue
            where = f"tensor {name!r}"
            _check(isinstance(info, dict), f"{where}: entry is not an object")
            # other keys are ignored, as the reference reader ignores them
            _check({"dtype", "shape", "data_offsets"} <= set(info),
                   f"{where}: expected the keys dtype, shape, data_offsets, got "
                   f"{sorted(info)}")
            st, shape, offs = info["dtype"], info["shape"], info["data_offsets"]
            _check(isinstance(st, str), f"{where}: dtype must be a string")
            _check(st in _ST_TO_NP, f"{where}: dtype {st!r} is not supported by tensorplay "
                                    f"(expected one of {', '.join(_ST_TO_NP)})")
            _check(isinstance(shape, list) and all(_is_int(s) and s >= 0 for s in shape),
                   f"{where}: shape must be a list of non-negative integers, got {shape!r}")
            _check(isinstance(offs, list) and len(offs) == 2 and
                   all(_is_int(o) and o >= 0 for o in offs),
                   f"{where}: data_offsets must be two non-negative integers, got {offs!r}")
            dt = _ST_TO_NP[st]
            numel = 1
            for s in shape:
                numel *= s
            begin, end = offs
            _check(end - begin == numel * dt.itemsize,
                   f"{where}: data_offsets {offs} span {end - begin} bytes, but dtype {st} "
                   f"and shape {shape} need {numel * dt.itemsize}")
            entries.append((name, dt, tuple(shape), begin, end))
        entries.sort(key=lambda e: (e[3], e[4]))
        pos = 0
        for name, _, _, begin, end in entries:
            _check(begin >= pos, f"tensor {name!r}: data_offsets [{begin}, {end}] overlap "
                                 f"the previous tensor (which ends at {pos})")
            _check(begin == pos, f"tensor {name!r}: a gap of {begin - pos} bytes before "
                                 f"its data (at {pos})")
            pos = end
        return entries, metadata

    def _parse_metadata(self, metadata, entries):
        """tensorplay's records and tree, checked against the header; None for a
        plain safetensors file."""
        if metadata is None or (_META_KEY not in metadata and _META_CRC_KEY not in metadata):
            return None
        _check(_META_KEY in metadata and _META_CRC_KEY in metadata,
               f"__metadata__ has only one of {_META_KEY!r} and {_META_CRC_KEY!r}")
        meta_str, crc_str = metadata[_META_KEY], metadata[_META_CRC_KEY]
        _check(crc_str.isascii() and crc_str.isdigit() and
               str(zlib.crc32(meta_str.encode("utf-8"))) == crc_str,
               "the tensorplay metadata does not match its CRC32: it is corrupted")
        meta = _json_object(meta_str, "the tensorplay metadata")
        _check(set(meta) == {"version", "tensors", "tree"},
               f"the tensorplay metadata has keys {sorted(meta)}, expected version, "
               f"tensors, tree")
        _check(meta["version"] == _FORMAT_VERSION and _is_int(meta["version"]),
               f"format version {meta['version']!r} is not supported (expected "
               f"{_FORMAT_VERSION}); it was written by a newer tensorplay?")
        recs = meta["tensors"]
        _check(isinstance(recs, list), "the tensorplay metadata: tensors must be a list")
        by_name = {e[0]: e for e in entries}
        records = {}
        for i, rec in enumerate(recs):
            _check(isinstance(rec, dict) and
                   set(rec) == {"name", "dtype", "shape", "requires_grad", "crc32"},
                   f"the tensorplay metadata: tensors[{i}] is malformed")
            name = rec["name"]
            _check(isinstance(name, str) and name in by_name and name not in records,
                   f"the tensorplay metadata: tensors[{i}] names {name!r}, which is not "
                   f"a tensor of the file (or is named twice)")
            e = by_name[name]
            _check(rec["dtype"] == _dtype_name(e[1]) and isinstance(rec["shape"], list)
                   and all(_is_int(d) for d in rec["shape"]) and rec["shape"] == list(e[2]),
                   f"tensor {name!r}: the header says {_dtype_name(e[1])} {list(e[2])}, "
                   f"the tensorplay metadata {rec['dtype']} {rec['shape']}")
            _check(type(rec["requires_grad"]) is bool and _is_int(rec["crc32"]) and
                   0 <= rec["crc32"] < 2 ** 32,
                   f"the tensorplay metadata: tensors[{i}] has a bad requires_grad or crc32")
            _check(not rec["requires_grad"] or e[1].kind == "f",
                   f"tensor {name!r}: requires_grad on a {_dtype_name(e[1])} tensor")
            records[name] = rec
        _check(len(records) == len(entries),
               f"the file has {len(entries)} tensors, the tensorplay metadata describes "
               f"{len(records)}")
        used = [False] * len(recs)
        _check_tree(meta["tree"], used, 0)
        _check(all(used), "the tensorplay metadata: a tensor is not referenced by the tree")
        return records, meta["tree"], recs


def _dtype_name(np_dtype):
    return _NP_KIND_TO_ST[(np_dtype.kind, np_dtype.itemsize)]


def _reject_constant(c):
    raise _Corrupt(f"{c} is not valid JSON")


def _pairs_no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        _check(k not in d, f"duplicate key {k!r} in a JSON object")
        d[k] = v
    return d


def _json_object(text, what):
    try:
        obj = json.loads(text, object_pairs_hook=_pairs_no_duplicates,
                         parse_constant=_reject_constant)
    except (ValueError, RecursionError) as e:     # JSONDecodeError, int digit limit
        raise _Corrupt(f"{what} is not valid JSON ({e})") from None
    _check(isinstance(obj, dict), f"{what} is not a JSON object")
    return obj


_LEAF_KINDS = {"int": lambda v: _is_int(v), "bool": lambda v: type(v) is bool,
               "str": lambda v: isinstance(v, str),
               "float": lambda v: isinstance(v, str) and _HEX16.match(v) is not None}


def _check_tree(node, used, depth):
    """Validate a tree node (types, arity, tensor references used exactly once)."""
    _check(depth <= MAX_DEPTH + 1, f"the tensorplay metadata nests deeper than {MAX_DEPTH}")
    _check(isinstance(node, list) and node and isinstance(node[0], str),
           f"the tensorplay metadata: malformed tree node {_short(node)}")
    kind = node[0]
    if kind == "none":
        _check(len(node) == 1, f"the tensorplay metadata: malformed node {_short(node)}")
        return
    _check(len(node) == 2, f"the tensorplay metadata: malformed node {_short(node)}")
    value = node[1]
    if kind == "tensor":
        _check(_is_int(value) and 0 <= value < len(used) and not used[value],
               f"the tensorplay metadata: tensor reference {value!r} is out of range or "
               f"used twice")
        used[value] = True
    elif kind in _LEAF_KINDS:
        _check(_LEAF_KINDS[kind](value),
               f"the tensorplay metadata: bad {kind} value {_short(value)}")
    elif kind in ("list", "tuple"):
        _check(isinstance(value, list), f"the tensorplay metadata: bad {kind} node")
        for child in value:
            _check_tree(child, used, depth + 1)
    elif kind in ("dict", "odict"):
        _check(isinstance(value, list), f"the tensorplay metadata: bad {kind} node")
        keys = set()
        for item in value:
            _check(isinstance(item, list) and len(item) == 2 and
                   type(item[0]) in (str, int) and (type(item[0]), item[0]) not in keys,
                   f"the tensorplay metadata: bad or duplicate {kind} item {_short(item)}")
            keys.add((type(item[0]), item[0]))
            _check_tree(item[1], used, depth + 1)
    else:
        raise _Corrupt(f"the tensorplay metadata: unknown node kind {kind!r}")


def _short(x):
    s = repr(x)
    return s if len(s) <= 60 else s[:57] + "..."


def _decode(node, tensors):
    """The object for a validated tree node."""
    kind = node[0]
    if kind == "tensor":
        return tensors[node[1]]
    if kind in ("int", "bool", "str"):
        return node[1]
    if kind == "float":
        return struct.unpack("<d", bytes.fromhex(node[1]))[0]
    if kind == "none":
        return None
    if kind == "list":
        return [_decode(c, tensors) for c in node[1]]
    if kind == "tuple":
        return tuple(_decode(c, tensors) for c in node[1])
    cls = dict if kind == "dict" else collections.OrderedDict
    return cls((k, _decode(v, tensors)) for k, v in node[1])
