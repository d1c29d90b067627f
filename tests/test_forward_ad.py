"""Forward AD (``tensorplay.autograd.forward_ad``): dual levels as PyTorch numbers
them, ``make_dual``'s refusals (PyTorch's messages), ``unpack_dual`` of non-duals,
and tangents through in-place ops -- ``add_``, ``mul_``, ``x[idx] = dual``, writes
through views -- against closed forms (and torch where installed).
"""
import numpy as np
import pytest

import tensorplay as tp
from tensorplay.autograd import _forward, forward_ad as fw

F64 = tp.float64


def T(a):
    return tp.tensor(np.asarray(a, dtype=np.float64))


def npy(t):
    return None if t is None else t.detach().numpy()


def tangent(t):
    return npy(fw.unpack_dual(t).tangent)


# ================================================================ levels
def test_dual_level_yields_pytorchs_index():
    for _ in range(3):                       # 0 every time: levels do not nest
        with fw.dual_level() as level:
            assert level == 0
    assert fw.enter_dual_level() == 0
    fw.exit_dual_level(level=0)
    assert fw.enter_dual_level() == 0
    fw.exit_dual_level()


def test_dual_level_matches_torch():
    torch = pytest.importorskip("torch")
    with torch.autograd.forward_ad.dual_level() as theirs, fw.dual_level() as ours:
        pass
    assert ours == theirs


def test_level_errors():
    with pytest.raises(RuntimeError, match="no dual level is active"):
        fw.exit_dual_level()
    with fw.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fw.enter_dual_level()
        with pytest.raises(RuntimeError, match="not the last one that was created"):
            fw.exit_dual_level(level=1)
        x = T([1.0])
        with pytest.raises(RuntimeError, match="Invalid level 1"):
            fw.make_dual(x, x, level=1)
        with pytest.raises(RuntimeError, match="Invalid level 2"):
            fw.unpack_dual(x, level=2)
        with pytest.raises(TypeError, match="level must be an int"):
            fw.make_dual(x, x, level="0")
        d = fw.make_dual(x, T([2.0]), level=0)
        assert tangent(d) == [2.0] and npy(fw.unpack_dual(d, level=0).tangent) == [2.0]
    with fw.dual_level():                    # still usable after the errors
        pass


def test_tangents_are_dropped_with_their_level():
    with fw.dual_level():
        d = fw.make_dual(T([1.0, 2.0]), T([3.0, 4.0]))
        y = d * 2
    assert fw.unpack_dual(d).tangent is None and fw.unpack_dual(y).tangent is None
    with fw.dual_level():                    # a later level (also index 0) sees none
        assert fw.unpack_dual(d).tangent is None
        assert fw.unpack_dual(y * 3).tangent is None


# ================================================================ make_dual / unpack_dual
def test_make_dual_refusals():
    x = T([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="Trying to create a dual Tensor for forward AD but "
                                           "no level exists"):
        fw.make_dual(x, x)
    with fw.dual_level():
        d = fw.make_dual(x, T([1.0, 1.0, 1.0]))
        with pytest.raises(RuntimeError, match="Setting a forward grad that itself has a "
                                               "forward gradient at the same level 0"):
            fw.make_dual(T([0.0, 0.0, 0.0]), d)
        with pytest.raises(RuntimeError, match="Making a dual Tensor based on a Tensor that "
                                               "already has a forward gradient"):
            fw.make_dual(d, x)
        with pytest.raises(RuntimeError, match=r"different size than that of the original "
                                               r"Tensor, this is not supported\. Tensor is of "
                                               r"size \[3\] while the given forward gradient "
                                               r"is of size \[2\]"):
            fw.make_dual(x, T([1.0, 1.0]))
        with pytest.raises(RuntimeError, match="different dtype than that of the original "
                                               "Tensor"):
            fw.make_dual(x, tp.ones(3, dtype=tp.float32))
        with pytest.raises(ValueError, match="Expected tangent to be floating point or complex, "
                                             "but got: tensorplay.int64"):
            fw.make_dual(x, tp.ones(3, dtype=tp.int64))
        with pytest.raises(ValueError, match="Expected primal to be floating point"):
            fw.make_dual(tp.ones(3, dtype=tp.int64), x)
        with pytest.raises(TypeError, match="tangent to be a Tensor"):
            fw.make_dual(x, 1.0)
        # the primal itself (unpacked) and a tangent made dual at an exited level are fine
        p = fw.unpack_dual(d).primal
        np.testing.assert_array_equal(tangent(fw.make_dual(p, T([5.0, 5.0, 5.0]))), [5.] * 3)


def test_make_dual_messages_match_torch():
    torch = pytest.importorskip("torch")
    tfw = torch.autograd.forward_ad

    def msg(lib_fw, mk):
        x = mk([1.0, 2.0, 3.0])
        with lib_fw.dual_level():
            d = lib_fw.make_dual(x, mk([1.0, 1.0, 1.0]))
            out = []
            for f in (lambda: lib_fw.make_dual(mk([0.0, 0.0, 0.0]), d),
                      lambda: lib_fw.make_dual(d, x),
                      lambda: lib_fw.make_dual(x, mk([1.0, 1.0]))):
                with pytest.raises(RuntimeError) as info:
                    f()
                out.append(str(info.value).replace("make_dual(): ", "")[:60]
                           .replace("level0", "level 0"))
            return out
    ours = msg(fw, T)
    theirs = msg(tfw, lambda a: torch.tensor(a, dtype=torch.float64))
    assert ours == theirs


def test_unpack_dual_of_a_non_dual():
    x = T([1.0, 2.0])
    with fw.dual_level():
        u = fw.unpack_dual(x)
        assert isinstance(u, fw.UnpackedDualTensor) and u.tangent is None and u.primal is x
        primal, tan = u
        assert tan is None
    u = fw.unpack_dual(x)                              # outside any level too
    assert u == (x, None) and u._fields == ("primal", "tangent")
    with pytest.raises(TypeError, match="expected a Tensor"):
        fw.unpack_dual([1.0])


def test_unpack_dual_returns_the_tangent_itself():
    with fw.dual_level():
        t = T([1.0, 2.0])
        d = fw.make_dual(T([0.0, 0.0]), t)
        primal, tan = fw.unpack_dual(d)
        assert tan is t                                # as PyTorch
        assert fw.unpack_dual(primal).tangent is None
        assert _forward.unpack_dual is fw.unpack_dual


# ================================================================ in-place ops
def test_add_and_sub_inplace_propagate_tangents():
    with fw.dual_level():
        d = fw.make_dual(T([1.0, 2.0, 3.0]), T([0.1, 0.2, 0.3]))
        e = fw.make_dual(T([4.0, 5.0, 6.0]), T([1.0, -1.0, 2.0]))
        d.add_(T([1.0, 1.0, 1.0]))                     # constant: tangent unchanged
        np.testing.assert_allclose(tangent(d), [0.1, 0.2, 0.3])
        d.add_(e, alpha=2.0)                           # t_d + 2 t_e
        np.testing.assert_allclose(tangent(d), [2.1, -1.8, 4.3])
        d.sub_(e)
        np.testing.assert_allclose(tangent(d), [1.1, -0.8, 2.3])
        np.testing.assert_allclose(npy(fw.unpack_dual(d).primal), [6.0, 8.0, 10.0])
        c = T([1.0, 1.0, 1.0])
        c += e                                         # a normal tensor becomes dual
        np.testing.assert_allclose(tangent(c), [1.0, -1.0, 2.0])


def test_mul_and_div_inplace_product_rule():
    xv, tx = np.array([1.0, 2.0, 3.0]), np.array([0.1, 0.2, 0.3])
    yv, ty = np.array([2.0, -1.0, 0.5]), np.array([1.0, 0.0, -2.0])
    with fw.dual_level():
        x = fw.make_dual(T(xv), T(tx))
        y = fw.make_dual(T(yv), T(ty))
        x.mul_(y)                                      # d(xy) = tx y + x ty
        np.testing.assert_allclose(tangent(x), tx * yv + xv * ty)
        x.div_(y)                                      # back to x: tangent tx
        np.testing.assert_allclose(tangent(x), tx, atol=1e-15)
        x.mul_(3.0)
        np.testing.assert_allclose(tangent(x), 3 * tx)
        x.exp_()                                       # d exp(u) = exp(u) du
        np.testing.assert_allclose(tangent(x), np.exp(3 * xv) * 3 * tx)


def test_setitem_with_a_dual_value():
    with fw.dual_level():
        x = T([0.0, 0.0, 0.0, 0.0])
        y = fw.make_dual(T([5.0, 6.0]), T([1.0, 2.0]))
        x[1:3] = y                                     # tangent zero outside the region
        np.testing.assert_array_equal(npy(fw.unpack_dual(x).primal), [0, 5, 6, 0])
        np.testing.assert_array_equal(tangent(x), [0.0, 1.0, 2.0, 0.0])
        x[tp.tensor([0, 3])] = y * 10                  # advanced index
        np.testing.assert_array_equal(tangent(x), [10.0, 1.0, 2.0, 20.0])
        x[2] = 7.0                                     # a constant overwrites the tangent
        np.testing.assert_array_equal(tangent(x), [10.0, 1.0, 0.0, 20.0])


def test_inplace_through_a_view():
    with fw.dual_level():
        b = fw.make_dual(T([[1.0, 2.0], [3.0, 4.0]]), T([[1.0, 1.0], [1.0, 1.0]]))
        v = b[0]                                       # a view of the dual
        v.mul_(T([2.0, 3.0]))
        np.testing.assert_array_equal(npy(fw.unpack_dual(b).primal), [[2, 6], [3, 4]])
        np.testing.assert_array_equal(tangent(b), [[2.0, 3.0], [1.0, 1.0]])
        np.testing.assert_array_equal(tangent(v), [2.0, 3.0])
        w = b.t()                                      # and a view of another layout
        w[1, 1] = 0.0                                  # b[1, 1]: tangent zero there
        np.testing.assert_array_equal(tangent(b), [[2.0, 3.0], [1.0, 0.0]])
        np.testing.assert_array_equal(tangent(w), [[2.0, 1.0], [3.0, 0.0]])
        # a normal base, written through its view with a dual value
        n = T([1.0, 2.0, 3.0])
        n[::2].add_(fw.make_dual(T([1.0, 1.0]), T([4.0, 5.0])))
        np.testing.assert_array_equal(tangent(n), [4.0, 0.0, 5.0])


def test_inplace_matches_torch():
    torch = pytest.importorskip("torch")
    tfw = torch.autograd.forward_ad

    def run(lib_fw, mk, idx):
        with lib_fw.dual_level():
            b = lib_fw.make_dual(mk([[1.0, 2.0], [3.0, 4.0]]), mk([[0.5, 1.0], [1.5, 2.0]]))
            y = lib_fw.make_dual(mk([2.0, 3.0]), mk([1.0, -1.0]))
            v = b[1]
            v.mul_(y)
            b.add_(mk([[1.0, 1.0], [1.0, 1.0]]))
            b[0] = y * y
            b[idx] = 0.0
            return lib_fw.unpack_dual(b).tangent.detach().numpy().copy()
    ours = run(fw, T, (1, 0))
    theirs = run(tfw, lambda a: torch.tensor(a, dtype=torch.float64), (1, 0))
    np.testing.assert_allclose(ours, theirs, rtol=1e-15)
