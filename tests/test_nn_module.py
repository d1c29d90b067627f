"""nn.Module, nn.Parameter and the containers: registration, traversal, modes,
state_dict round trips and errors, conversion, hooks, repr (PyTorch's formats)."""
import copy
import pickle
import re
from collections import OrderedDict

import numpy as np
import pytest

import tensorplay as tp
from tensorplay import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(4, 2, bias=False)
        self.scale = nn.Parameter(tp.ones(1))
        self.register_buffer("steps", tp.zeros(1))
        self.register_buffer("scratch", tp.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


# ---------------------------------------------------------------- Parameter
def test_parameter_is_tensor_leaf_requiring_grad():
    t = tp.randn(2, 3)
    p = nn.Parameter(t)
    assert isinstance(p, nn.Parameter) and isinstance(p, tp.Tensor)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert repr(p).startswith("Parameter containing:\ntensor(")
    with tp.no_grad():
        t.add_(1)                               # shares storage, as PyTorch
    assert np.array_equal(p.detach().numpy(), t.numpy())
    assert type(p * 2) is tp.Tensor             # ops return plain tensors
    assert not nn.Parameter(t, requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)


def test_parameter_errors_and_copies():
    with pytest.raises(TypeError, match="must be a Tensor"):
        nn.Parameter([1.0, 2.0])
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(tp.arange(3))
    p = nn.Parameter(tp.randn(3))
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad
    with tp.no_grad():
        q.add_(1)
    assert not np.allclose(q.detach().numpy(), p.detach().numpy())
    r = pickle.loads(pickle.dumps(p))
    assert isinstance(r, nn.Parameter) and np.array_equal(r.detach().numpy(),
                                                          p.detach().numpy())


# ---------------------------------------------------------------- registration
def test_registration_and_traversal():
    m = Net()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert len(list(m.parameters())) == 4
    assert [n for n, _ in m.named_parameters(recurse=False)] == ["scale"]
    assert [n for n, _ in m.named_parameters(prefix="net")][1] == "net.fc1.weight"
    assert [n for n, _ in m.named_buffers()] == ["steps", "scratch"]
    assert [n for n, _ in m.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in m.named_modules()] == ["", "fc1", "act", "fc2"]
    assert list(m.children())[0] is m.fc1 and list(m.modules())[0] is m
    # parameter counts: 3*4+4 + 4*2 + 1
    assert sum(p.numel() for p in m.parameters()) == 25
    assert "fc1" in dir(m) and "steps" in dir(m) and "scale" in dir(m)


def test_shared_parameters_and_modules_count_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    seq.load_state_dict(seq.state_dict())
    assert len(list(seq.modules())) == 2


def test_setattr_routes_and_errors():
    m = Net()
    with pytest.raises(TypeError, match=r"cannot assign 'tensorplay.FloatTensor' as parameter "
                                        r"'scale' \(tensorplay.nn.Parameter or None expected\)"):
        m.scale = tp.ones(1)
    with pytest.raises(TypeError, match="as child module 'fc1'"):
        m.fc1 = 3
    with pytest.raises(TypeError, match="as buffer 'steps'"):
        m.steps = 3
    m.steps = tp.ones(1)                        # a tensor to a buffer name: a buffer
    assert "steps" in dict(m.named_buffers())
    m.scale = None
    assert m.scale is None and "scale" not in dict(m.named_parameters())
    m.extra = nn.Parameter(tp.zeros(2))
    assert "extra" in dict(m.named_parameters())
    with pytest.raises(TypeError, match="as parameter 'extra'"):
        m.extra = nn.Linear(1, 1)               # as PyTorch: delete the parameter first
    del m.extra
    m.extra = nn.Linear(1, 1)
    assert "extra" not in dict(m.named_parameters()) and isinstance(m.extra, nn.Linear)
    m.buf = nn.Buffer(tp.ones(3), persistent=False)
    assert "buf" in dict(m.named_buffers()) and "buf" not in m.state_dict()
    assert type(m.buf) is tp.Tensor
    del m.fc1
    assert "fc1" not in dict(m.named_children())
    with pytest.raises(AttributeError, match="^'Net' object has no attribute 'fc1'$"):
        m.fc1
    with pytest.raises(AttributeError, match="^'Linear' object has no attribute 'x'$"):
        nn.Linear(1, 1).x


def test_register_errors():
    m = nn.Linear(2, 2)
    with pytest.raises(KeyError) as e:
        m.register_parameter("a.b", None)
    assert e.value.args[0] == 'parameter name can\'t contain "."'
    with pytest.raises(KeyError, match="be empty string"):
        m.register_buffer("", None)
    with pytest.raises(KeyError, match="attribute 'in_features' already exists"):
        m.register_buffer("in_features", None)
    with pytest.raises(TypeError, match="parameter name should be a string. Got int"):
        m.register_parameter(1, None)
    with pytest.raises(TypeError, match="cannot assign 'tensorplay.FloatTensor' object to "
                                        "parameter 'p'"):
        m.register_parameter("p", tp.zeros(1))
    with pytest.raises(TypeError, match="object to buffer 'b'"):
        m.register_buffer("b", [1.0])
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("c", 3)
    x = tp.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor"):
        m.register_parameter("d", nn.Parameter.__new__(nn.Parameter, x) if False else
                             _nonleaf_parameter(x))

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(tp.zeros(1))
    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def _nonleaf_parameter(x):
    p = nn.Parameter(tp.zeros(2))
    p._grad_fn = (x * 2).grad_fn                # simulate a non-leaf Parameter
    return p


def test_get_submodule_parameter_buffer():
    m = nn.Sequential(OrderedDict([("block", Net())]))
    assert m.get_submodule("block.fc1") is m.block.fc1
    assert m.get_submodule("") is m
    assert m.get_parameter("block.fc1.weight") is m.block.fc1.weight
    assert m.get_buffer("block.steps") is m.block.steps
    with pytest.raises(AttributeError, match="Net has no attribute `nope`"):
        m.get_submodule("block.nope")
    with pytest.raises(AttributeError, match="`in_features` is not an nn.Parameter"):
        m.get_parameter("block.fc1.in_features")
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        m.get_submodule("block.fc1.weight")


# ---------------------------------------------------------------- modes, grads
def test_train_eval_requires_grad_zero_grad():
    m = Net()
    assert m.training and m.fc1.training
    assert m.eval() is m and not m.fc1.training
    m.train()
    assert m.fc1.training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train(1)
    m(tp.randn(5, 3)).sum().backward()
    g = m.fc1.weight.grad
    assert g is not None
    m.zero_grad(set_to_none=False)
    assert m.fc1.weight.grad is g and np.all(g.numpy() == 0)
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_apply_and_forward_missing():
    seen = []
    Net().apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "ReLU", "Linear", "Net"]
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1)


def test_linear_closed_form():
    m = nn.Linear(3, 2).double()
    x = tp.randn(4, 3, dtype=tp.float64)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.allclose(m(x).detach().numpy(), x.numpy() @ w.T + b, rtol=0, atol=1e-14)
    x3 = tp.randn(2, 4, 3, dtype=tp.float64)
    assert m(x3).shape == (2, 4, 2)


# ---------------------------------------------------------------- state_dict
def test_state_dict_keys_values_and_roundtrip(tmp_path):
    m = Net()
    sd = m.state_dict()
    assert list(sd) == ["scale", "steps", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert isinstance(sd, OrderedDict) and sd._metadata[""] == {"version": 1}
    assert not isinstance(sd["scale"], nn.Parameter) and not sd["scale"].requires_grad
    assert m.state_dict(keep_vars=True)["scale"] is m.scale
    m2 = Net()
    res = m2.load_state_dict(sd)
    assert repr(res) == "<All keys matched successfully>"
    assert res.missing_keys == [] and res.unexpected_keys == []
    x = tp.randn(3, 3)
    assert np.array_equal(m(x).detach().numpy(), m2(x).detach().numpy())
    # the loaded tensors are copies: the parameters stay the same objects
    assert m2.fc1.weight is not sd["fc1.weight"]
    path = tmp_path / "m.pt"
    tp.save(m.state_dict(), str(path))
    m3 = Net()
    m3.load_state_dict(tp.load(str(path)))
    assert np.array_equal(m(x).detach().numpy(), m3(x).detach().numpy())


def test_load_state_dict_errors_leave_module_unchanged():
    m = nn.Linear(2, 3)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    bad = {"weight": tp.zeros(2, 2), "bias": tp.zeros(3)}
    msg = ("Error(s) in loading state_dict for Linear:\n\tsize mismatch for weight: copying "
           "a param with shape tensorplay.Size([2, 2]) from checkpoint, the shape in current "
           "model is tensorplay.Size([3, 2]).")
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(bad)
    assert str(e.value) == msg
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict({"weight": tp.zeros(3, 2)})
    assert str(e.value) == ('Error(s) in loading state_dict for Linear:\n\tMissing key(s) in '
                            'state_dict: "bias". ')
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "extra". '):
        m.load_state_dict({"weight": tp.zeros(3, 2), "bias": tp.zeros(3),
                           "extra": tp.zeros(1)})
    for k, v in m.state_dict().items():            # nothing was written
        assert np.array_equal(v.numpy(), before[k].numpy())
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        m.load_state_dict([1, 2])
    with pytest.raises(RuntimeError, match="expected tensorplay.Tensor"):
        m.load_state_dict({"weight": [[0.0] * 2] * 3, "bias": tp.zeros(3)})
    res = m.load_state_dict({"weight": tp.ones(3, 2), "extra": tp.zeros(1)}, strict=False)
    assert res.missing_keys == ["bias"] and res.unexpected_keys == ["extra"]
    assert np.all(m.weight.detach().numpy() == 1)


def test_load_state_dict_assign_and_nested_unexpected():
    m = nn.Sequential(nn.Linear(2, 2))
    w = tp.ones(2, 2)
    m.load_state_dict({"0.weight": w, "0.bias": tp.zeros(2)}, assign=True)
    assert isinstance(m[0].weight, nn.Parameter) and m[0].weight.requires_grad
    assert np.array_equal(m[0].weight.detach().numpy(), w.numpy())
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: '
                                           '"1.weight", "0.gamma"'):     # PyTorch's order
        m.load_state_dict({"0.weight": w, "0.bias": tp.zeros(2), "0.gamma": w,
                           "1.weight": w})


# ---------------------------------------------------------------- conversion
def test_to_double_float_keep_parameter_objects():
    m = Net()
    w = m.fc1.weight
    m(tp.randn(2, 3)).sum().backward()
    assert m.double() is m
    assert m.fc1.weight is w and w.dtype == tp.float64 and w.grad.dtype == tp.float64
    assert m.steps.dtype == tp.float64
    m.to(tp.float32)
    assert w.dtype == tp.float32
    m.to(tp.randn(1, dtype=tp.float64))
    assert w.dtype == tp.float64
    m.to("cpu")
    with pytest.raises(TypeError, match="only accepts floating point"):
        m.to(tp.int64)


# ---------------------------------------------------------------- hooks
def test_forward_hooks():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append(out) or out + 1)
    y = m(tp.ones(1, 2))
    assert np.allclose(y.detach().numpy(), m.bias.detach().numpy() + 1)
    assert len(calls) == 1
    h1.remove()
    h2.remove()
    assert np.allclose(m(tp.zeros(1, 2)).detach().numpy(), m.bias.detach().numpy())
    with m.register_forward_pre_hook(lambda mod, a, k: ((a[0] + 1,), k), with_kwargs=True):
        y = m(tp.zeros(1, 2))
    assert np.allclose(y.detach().numpy(), m(tp.ones(1, 2)).detach().numpy())
    order = []
    m.register_forward_hook(lambda *a: order.append("a"))
    m.register_forward_hook(lambda *a: order.append("b"), prepend=True)
    m(tp.zeros(1, 2))
    assert order == ["b", "a"]
    bad = m.register_forward_pre_hook(lambda mod, a, k: 3, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        m(tp.zeros(1, 2))
    bad.remove()


def test_always_call_hook_runs_on_error():
    m = nn.Linear(2, 2)
    seen = []
    m.register_forward_hook(lambda mod, a, out: seen.append(out), always_call=True)
    with pytest.raises(RuntimeError):
        m(tp.zeros(1, 3))
    assert seen == [None]


# ---------------------------------------------------------------- repr
def test_repr_pytorch_format():
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Sequential(nn.Tanh()))
    assert repr(m) == ("Sequential(\n  (0): Linear(in_features=3, out_features=4, bias=True)"
                       "\n  (1): ReLU()\n  (2): Sequential(\n    (0): Tanh()\n  )\n)")
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU()])
    assert repr(ml) == ("ModuleList(\n  (0-2): 3 x Linear(in_features=2, out_features=2, "
                        "bias=True)\n  (3): ReLU()\n)")


# ---------------------------------------------------------------- containers
def test_sequential_indexing():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    s = nn.Sequential(a, b, c)
    assert len(s) == 3 and s[0] is a and s[-1] is c
    sub = s[1:]
    assert isinstance(sub, nn.Sequential) and list(sub) == [b, c]
    assert list(sub.state_dict()) == ["2.weight", "2.bias"]
    s.append(nn.Sigmoid())
    assert len(s) == 4 and isinstance(s[3], nn.Sigmoid)
    del s[1]
    assert [k for k, _ in s.named_children()] == ["0", "1", "2"] and s[1] is c
    s.insert(1, b)
    assert s[1] is b and s[2] is c
    s[0] = nn.Linear(2, 3)
    assert s[0] is not a
    with pytest.raises(IndexError, match="index 9 is out of range"):
        s[9]
    x = tp.randn(4, 2)
    assert s(x).shape == (4, 1)
    named = nn.Sequential(OrderedDict([("fc", nn.Linear(1, 1)), ("act", nn.ReLU())]))
    assert named.fc is named[0] and list(named.state_dict()) == ["fc.weight", "fc.bias"]
    assert len(s + named) == 6


def test_modulelist_moduledict_parameterlist():
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.append(nn.ReLU())
    ml.extend([nn.Tanh()])
    ml += [nn.Sigmoid()]
    assert len(ml) == 4 and isinstance(ml[-1], nn.Sigmoid)
    assert list(ml.state_dict()) == ["0.weight", "0.bias"]
    with pytest.raises(TypeError, match="should be called with an iterable"):
        ml.extend(3)
    md = nn.ModuleDict({"a": nn.Linear(1, 2), "b": nn.ReLU()})
    assert list(md.keys()) == ["a", "b"] and "a" in md and len(md) == 2
    assert list(md.state_dict()) == ["a.weight", "a.bias"]
    assert isinstance(md.pop("b"), nn.ReLU) and len(md) == 1
    pl = nn.ParameterList([nn.Parameter(tp.zeros(2)), tp.ones(3)])
    assert all(isinstance(p, nn.Parameter) for p in pl)
    assert list(pl.state_dict()) == ["0", "1"] and len(list(pl.parameters())) == 2
    pl.append(tp.zeros(1))
    assert len(pl) == 3 and pl[-1].shape == (1,)
    pd = nn.ParameterDict({"w": tp.zeros(2)})
    pd["v"] = nn.Parameter(tp.ones(1))
    assert list(pd.keys()) == ["w", "v"] and isinstance(pd["w"], nn.Parameter)
    assert list(pd.state_dict()) == ["w", "v"]


def test_deepcopy_module_independent():
    m = Net()
    m2 = copy.deepcopy(m)
    with tp.no_grad():
        m2.fc1.weight.add_(1)
    assert not np.allclose(m.fc1.weight.detach().numpy(), m2.fc1.weight.detach().numpy())
    assert isinstance(m2.fc1.weight, nn.Parameter)


# ---------------------------------------------------------------- against torch
def test_against_torch_state_dict_and_repr():
    torch = pytest.importorskip("torch")
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(),
                             torch.nn.Linear(4, 2)).double()
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).double()
    assert repr(tm) == repr(m)
    assert list(tm.state_dict()) == list(m.state_dict())
    m.load_state_dict({k: tp.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 3))
    tx = torch.tensor(x, requires_grad=True)
    px = tp.tensor(x, requires_grad=True)
    ty, py = tm(tx), m(px)
    assert np.allclose(ty.detach().numpy(), py.detach().numpy(), rtol=1e-13, atol=1e-14)
    ty.square().sum().backward()
    py.square().sum().backward()
    for (k, tp_), (_, p) in zip(tm.named_parameters(), m.named_parameters()):
        assert np.allclose(tp_.grad.numpy(), p.grad.numpy(), rtol=1e-12, atol=1e-13), k
    assert np.allclose(tx.grad.numpy(), px.grad.numpy(), rtol=1e-12, atol=1e-13)
    # a torch state_dict loads as it is (values through __array__), and numpy arrays
    m2 = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).double()
    m2.load_state_dict(tm.state_dict())
    assert np.array_equal(m2(px).detach().numpy(), py.detach().numpy())
    m2.load_state_dict({k: v.numpy() for k, v in tm.state_dict().items()})
    assert np.array_equal(m2(px).detach().numpy(), py.detach().numpy())
    # the same error text (up to the library's name)
    with pytest.raises(RuntimeError) as te:
        tm.load_state_dict({"0.weight": torch.zeros(1)})
    with pytest.raises(RuntimeError) as pe:
        m.load_state_dict({"0.weight": tp.zeros(1)})
    assert re.sub("torch", "tensorplay", str(te.value)) == str(pe.value)


def test_module_pickles_and_saves(tmp_path):
    m = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    m2 = pickle.loads(pickle.dumps(m))
    x = tp.randn(4, 3)
    assert np.array_equal(m(x).detach().numpy(), m2(x).detach().numpy())
    assert isinstance(m2[0].weight, nn.Parameter) and m2[0].weight.requires_grad
    assert repr(m2) == repr(m)


def test_buffers_follow_dtype_and_state():
    m = nn.Module()
    m.register_buffer("count", tp.tensor(3))
    m.register_buffer("stat", tp.zeros(2))
    m.double()
    assert m.count.dtype == tp.int64 and m.stat.dtype == tp.float64
    m.register_buffer("stat", None)
    assert "stat" not in m.state_dict()
    assert list(m.state_dict()) == ["count"]


# ---------------------------------------------------------------- functional_call
def test_functional_call_replaces_and_restores():
    m = nn.Linear(3, 2)
    w, b = m.weight, m.bias
    new_w = tp.ones(2, 3, requires_grad=True)
    x = tp.randn(4, 3)
    out = nn.utils.functional_call(m, {"weight": new_w}, (x,))
    assert np.allclose(out.detach().numpy(), x.numpy().sum(1, keepdims=True)
                       + b.detach().numpy(), atol=1e-6)
    assert m.weight is w and isinstance(m.weight, nn.Parameter)     # restored
    out.sum().backward()
    assert np.allclose(new_w.grad.numpy(), np.tile(x.numpy().sum(0), (2, 1)), atol=1e-5)
    assert w.grad is None
    with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'nope'"):
        nn.utils.functional_call(m, {"nope": tp.ones(1)}, x)
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'bias'"):
        nn.utils.functional_call(m, {"weight": new_w}, x, strict=True)
    with pytest.raises(RuntimeError, match="appeared in multiple dictionaries"):
        nn.utils.functional_call(m, ({"weight": new_w}, {"weight": new_w}), x)
    with pytest.raises(RuntimeError):                       # forward fails: still restored
        nn.utils.functional_call(m, {"weight": tp.ones(2, 5)}, x)
    assert m.weight is w


def test_functional_call_is_also_tensorplay_func_functional_call():
    from tensorplay.func import functional_call      # torch.func's spelling
    assert functional_call is nn.utils.functional_call
    assert "functional_call" in dir(tp.func)


def test_functional_call_tied_weights_and_per_sample_grads():
    lin, lin2 = nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False)
    lin2.weight = lin.weight                        # one Parameter in two modules
    tied = nn.Sequential(lin, lin2)
    x = tp.randn(3, 2)
    eye = tp.eye(2)
    assert np.allclose(nn.utils.functional_call(tied, {"0.weight": eye}, x).detach().numpy(),
                       x.numpy())
    out = nn.utils.functional_call(tied, {"0.weight": eye}, x, tie_weights=False)
    assert np.allclose(out.detach().numpy(), x.numpy() @ lin.weight.detach().numpy().T,
                       atol=1e-6)
    from tensorplay.func import grad, vmap
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)).double()
    params = {k: v.detach() for k, v in m.named_parameters()}
    xs, ys = tp.randn(5, 3, dtype=tp.float64), tp.randn(5, 1, dtype=tp.float64)

    def loss(p, xi, yi):
        return ((nn.utils.functional_call(m, p, xi.unsqueeze(0)) - yi) ** 2).sum()
    g = vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    for i in range(5):
        m.zero_grad()
        ((m(xs[i:i + 1]) - ys[i]) ** 2).sum().backward()
        for k, p in m.named_parameters():
            assert np.allclose(g[k][i].numpy(), p.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_load_state_dict_of_numpy_values_keeps_0d_entries():
    """A BatchNorm's num_batches_tracked is 0-d: numpy / torch values of a state
    dict load with their shape (a 0-d array must not become shape (1,))."""
    src = nn.BatchNorm1d(2)
    src.running_mean.copy_(tp.tensor([1.0, 2.0]))
    src.num_batches_tracked.fill_(7)
    dst = nn.BatchNorm1d(2)
    dst.load_state_dict({k: v.numpy() for k, v in src.state_dict().items()})
    assert dst.num_batches_tracked.shape == () and int(dst.num_batches_tracked) == 7
    np.testing.assert_array_equal(dst.running_mean.numpy(), [1.0, 2.0])


def test_load_state_dict_from_a_torch_batchnorm():
    torch = pytest.importorskip("torch")
    t = torch.nn.BatchNorm2d(3)
    t.train()
    t(torch.randn(4, 3, 2, 2))
    m = nn.BatchNorm2d(3)
    m.load_state_dict(t.state_dict())
    assert int(m.num_batches_tracked) == 1
    np.testing.assert_allclose(m.running_var.numpy(), t.running_var.numpy(), rtol=1e-6)
