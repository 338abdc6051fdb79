"""The names a PyTorch user reaches for first, held to torch's meaning: hg.Size, hg.device, the dtype
names (those handgrad does not build are refused on use), the default dtype, hg.cuda, hg.save and
hg.load (the derivatives, hg.autograd.functional and hg.func, are in test_pytorch_derivatives.py).
Each comparison with torch (values, shapes, dtypes) is skipped where torch is not installed; the
rest runs everywhere."""
import io
import pickle

import numpy as np
import pytest

import handgrad as hg
from torch_pairs import _same, needs_torch, torch


# ---------------------------------------------------------------- hg.Size

def test_shape_and_size_are_hg_size():
    x = hg.zeros(2, 3)
    assert isinstance(x.shape, hg.Size) and isinstance(x.size(), hg.Size) and isinstance(x.shape, tuple)
    assert x.shape == (2, 3) and x.size() == x.shape and x.size(1) == 3 and x.size(-1) == 3
    assert isinstance(x.shape[1:], hg.Size) and isinstance(x.shape + (4,), hg.Size) and isinstance((4,) + x.shape, hg.Size)
    assert repr(x.shape) == "handgrad.Size([2, 3])" and x.shape.numel() == 6
    assert hg.zeros(x.shape).shape == (2, 3) and x.view(hg.Size([3, 2])).shape == (3, 2)
    assert pickle.loads(pickle.dumps(x.shape)) == x.shape
    with pytest.raises(TypeError):
        hg.Size([2.5])


@needs_torch
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 4), (2, 3)])
def test_size_as_torch(shape):
    h, t = hg.zeros(shape).shape, torch.zeros(shape).shape
    assert h == t and h.numel() == t.numel() and h[1:] == t[1:] and type(h[:1]) is hg.Size
    assert (h + (5,)) == (t + (5,)) and repr(h).split(".", 1)[1] == repr(t).split(".", 1)[1]


# ---------------------------------------------------------------- hg.device

@needs_torch
@pytest.mark.parametrize("args", [("cpu",), ("cuda",), ("cuda", 0), ("cuda:0",)])
def test_device_as_torch(args):
    h, t = hg.device(*args), torch.device(*args)
    assert (h.type, h.index, str(h), repr(h)) == (t.type, t.index, str(t), repr(t))
    assert hg.device(h) == h and hash(h) == hash(hg.device(*args))
    for other in [("cpu",), ("cuda",), ("cuda", 0)]:
        assert (h == hg.device(*other)) == (t == torch.device(*other))


@needs_torch
def test_device_refusals_as_torch():
    for bad in ("gpu", "cuda:x"):
        with pytest.raises(RuntimeError):
            torch.device(bad)
        with pytest.raises(hg.Error, match="device"):
            hg.device(bad)
    with pytest.raises(RuntimeError):
        torch.device("cuda", -1)
    with pytest.raises(hg.Error, match="negative"):
        hg.device("cuda", -1)


def test_device_differences_documented():
    # a device equals its name here (torch.device never equals a str), so 'cpu' code keeps working
    assert hg.device("cpu") == "cpu" and hg.device("cuda", 0) == "cuda:0" and hg.device("cuda") != "cuda:0"
    if torch is not None:
        assert torch.device("cpu") != "cpu"
    with pytest.raises(hg.Error, match="one cuda device"):
        hg.device("cuda", 1)  # handgrad drives one GPU, cuda:0


def test_device_is_accepted_wherever_device_is():
    cpu = hg.device("cpu")
    x = hg.ones(2, 3, device=cpu)
    assert x.device == cpu and x.device.type == "cpu" and x.device.index is None and repr(x.device) == "device(type='cpu')"
    for made in (hg.zeros(2, device=cpu), hg.tensor([1.0], device=cpu), hg.randn(2, device=cpu), x.to(cpu),
                 x.to(cpu, hg.float64), hg.ones_like(x, device=cpu), hg.arange(3, device=cpu), x.to(x.double())):
        assert made.device == "cpu" and isinstance(made.device, hg.device)
    assert x.to(x.double()).dtype == hg.float64
    assert pickle.loads(pickle.dumps(cpu)) == cpu


# ---------------------------------------------------------------- dtypes

NOT_BUILT = ["int8", "int16", "int32", "uint8", "float16", "bfloat16", "complex64", "complex128", "half", "short",
             "cfloat", "cdouble"]


@needs_torch
@pytest.mark.parametrize("name", NOT_BUILT + ["float32", "float64", "int64", "bool"])
def test_dtype_names_as_torch(name):
    h, t = getattr(hg, name), getattr(torch, name)
    assert str(h).split(".")[1] == str(t).split(".")[1] and h.itemsize == t.itemsize
    assert h.is_floating_point == t.is_floating_point


@needs_torch
@pytest.mark.parametrize("name", NOT_BUILT)
def test_dtype_names_not_built_flags_as_torch(name):
    h, t = getattr(hg, name), getattr(torch, name)
    assert (h.is_complex, h.is_signed) == (t.is_complex, t.is_signed)


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "uint8", "float16", "bfloat16", "complex64"])
def test_dtypes_not_built_are_refused_on_use(name):
    d = getattr(hg, name)
    x = hg.tensor([1.0, 2.0])
    assert d != hg.int64 and d != hg.float32 and x.dtype != d and hg.tensor([1]).dtype == hg.int64
    with pytest.raises(hg.Error, match=f"handgrad has no {name}"):
        x.to(d)
    with pytest.raises(hg.Error, match=f"handgrad has no {name}"):
        x.to("cpu", d)
    with pytest.raises(hg.Error, match=f"handgrad has no {name}"):
        x.to(dtype=d)
    with pytest.raises((TypeError, hg.Error), match=name):
        hg.zeros(2, dtype=d)
    with pytest.raises((TypeError, hg.Error), match=name):
        hg.tensor([1, 2], dtype=d)


# ---------------------------------------------------------------- default dtype

@pytest.fixture
def float64_default():
    hg.set_default_dtype(hg.float64)
    if torch is not None:
        torch.set_default_dtype(torch.float64)
    yield
    hg.set_default_dtype(hg.float32)
    if torch is not None:
        torch.set_default_dtype(torch.float32)


MADE = {
    "tensor float": lambda m: m.tensor([1.0, 2.5]),
    "tensor 0-d": lambda m: m.tensor(1.5),
    "tensor int": lambda m: m.tensor([1, 2]),
    "tensor bool": lambda m: m.tensor([True]),
    "tensor numpy float32": lambda m: m.tensor(np.ones(2, np.float32)),
    "zeros": lambda m: m.zeros(2, 3),
    "ones": lambda m: m.ones(2),
    "empty": lambda m: m.empty(2),
    "full float": lambda m: m.full((2,), 1.5),
    "full int": lambda m: m.full((2,), 3),
    "randn": lambda m: m.randn(2),
    "rand": lambda m: m.rand(2),
    "arange float": lambda m: m.arange(0.0, 1.0, 0.25),
    "arange int": lambda m: m.arange(3),
    "linspace": lambda m: m.linspace(0, 1, 5),
    "eye": lambda m: m.eye(2),
}


def test_default_dtype_is_float32():
    assert hg.get_default_dtype() == hg.float32 and hg.tensor([1.0]).dtype == hg.float32


@needs_torch
@pytest.mark.parametrize("label", list(MADE))
def test_default_dtype_float64_as_torch(float64_default, label):
    assert hg.get_default_dtype() == hg.float64
    h, t = MADE[label](hg), MADE[label](torch)
    assert str(h.dtype).split(".")[1] == str(t.dtype).split(".")[1], label


def test_set_default_dtype_refuses_what_torch_refuses():
    with pytest.raises(TypeError, match="floating-point"):
        hg.set_default_dtype(hg.int64)
    with pytest.raises(hg.Error, match="no float16"):
        hg.set_default_dtype(hg.float16)
    assert hg.get_default_dtype() == hg.float32


# ---------------------------------------------------------------- hg.cuda

def test_cuda_module():
    assert hg.cuda.is_available() == hg.cuda_is_available()
    assert hg.cuda.device_count() == (1 if hg.cuda.is_available() else 0)
    if hg.cuda.is_available():
        assert hg.cuda.current_device() == 0 and hg.ones(2, device="cuda").device == hg.device("cuda", 0)
    else:
        with pytest.raises(hg.Error, match="no GPU"):
            hg.cuda.current_device()


# ---------------------------------------------------------------- hg.save / hg.load

SAVED = {
    "float32": lambda: hg.tensor([[1.5, -2.0], [3.0, 0.25]]),
    "float64 non-contiguous": lambda: hg.arange(6.0, dtype=hg.float64).view(2, 3).t(),
    "int64": lambda: hg.arange(5),
    "bool 0-d": lambda: hg.tensor(True),
    "empty": lambda: hg.zeros(0, 3),
}


@pytest.mark.parametrize("label", list(SAVED))
def test_save_load_tensor(tmp_path, label):
    x = SAVED[label]()
    hg.save(x, tmp_path / "x.safetensors")
    y = hg.load(tmp_path / "x.safetensors")
    assert isinstance(y, hg.Tensor) and y.shape == x.shape and y.dtype == x.dtype and y.device == "cpu"
    np.testing.assert_array_equal(y.numpy(), x.contiguous().numpy())


@needs_torch
def test_save_load_state_dict_as_torch(tmp_path):
    hg.manual_seed(0)
    layer = hg.nn.Linear(3, 2)
    state = {k: v.detach() for k, v in layer.state_dict().items()}
    w = hg.tensor([1.0, 2.0], requires_grad=True)
    state["w"] = w
    buffer = io.BytesIO()
    hg.save(state, buffer)
    buffer.seek(0)
    loaded = hg.load(buffer, map_location="cpu")
    t_state = {k: torch.tensor(v.detach().numpy()) for k, v in state.items()}
    t_state["w"].requires_grad_()
    t_buffer = io.BytesIO()
    torch.save(t_state, t_buffer)
    t_buffer.seek(0)
    t_loaded = torch.load(t_buffer)
    assert list(loaded) == list(t_loaded) == list(state)
    for k in state:
        _same(loaded[k], t_loaded[k], 0, 0)
        assert loaded[k].requires_grad == t_loaded[k].requires_grad
    fresh = hg.nn.Linear(3, 2)
    fresh.load_state_dict({k: v for k, v in loaded.items() if k != "w"})
    _same(fresh(hg.ones(1, 3)), torch.tensor(layer(hg.ones(1, 3)).detach().numpy()), 0, 0)


def test_save_refuses_other_objects(tmp_path):
    path = tmp_path / "x.safetensors"
    with pytest.raises(TypeError, match="a tensor or a dict"):
        hg.save([hg.ones(2)], path)
    with pytest.raises(TypeError, match="keys must be str"):
        hg.save({1: hg.ones(2)}, path)
    with pytest.raises(TypeError, match="values must be tensors"):
        hg.save({"a": 1.0}, path)
    with pytest.raises(TypeError, match="path or a binary file"):
        hg.save(hg.ones(2), 3)
    with pytest.raises(TypeError, match="map_location"):
        hg.load(path, map_location=lambda storage, loc: storage)


def test_load_reads_a_plain_safetensors_file_as_a_dict(tmp_path):
    hg.nn.save({"b": hg.ones(2), "a": hg.zeros(1)}, tmp_path / "m.safetensors")
    loaded = hg.load(tmp_path / "m.safetensors")
    assert isinstance(loaded, dict) and list(loaded) == ["b", "a"]
