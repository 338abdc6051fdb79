"""hg.nn.save / load: safetensors checkpoints, bit-exact round trips, the format's bytes, errors."""

import json
import struct

import numpy as np
import pytest

import handgrad as hg


def test_module_round_trip_is_bit_exact(tmp_path):
    a = hg.nn.TinyCharLM(20, num_hiddens=16, num_heads=2, num_blks=2, bias=True, generator=hg.Generator(1))
    b = hg.nn.TinyCharLM(20, num_hiddens=16, num_heads=2, num_blks=2, bias=True, generator=hg.Generator(2))
    path = tmp_path / "model.safetensors"
    hg.nn.save(a, path, metadata={"steps": 12, "note": "round trip"})
    assert hg.nn.load(path, b) is b
    for (n, p), (m, q) in zip(a.named_parameters(), b.named_parameters()):
        assert n == m
        assert p.detach().numpy().tobytes() == q.detach().numpy().tobytes(), n
    assert hg.nn.load_metadata(path) == {"steps": "12", "note": "round trip"}
    x, _ = hg.nn.repeated_batch(2, 9, 20, 3, 4, generator=hg.Generator(0))
    assert a(x).detach().numpy().tobytes() == b(x).detach().numpy().tobytes()


def test_dict_round_trip_every_dtype(tmp_path):
    tensors = {
        "f32": hg.randn(3, 4, seed=0),
        "f64": hg.randn(2, seed=1, dtype=hg.float64),
        "i64": hg.tensor([[1, -2], [3, 2**40]]),
        "b": hg.tensor([True, False, True]),
        "scalar": hg.tensor(2.5, dtype=hg.float64),
    }
    path = tmp_path / "t.safetensors"
    hg.nn.save(tensors, path)
    back = hg.nn.load(path)
    assert set(back) == set(tensors)
    for k, t in tensors.items():
        assert back[k].dtype == t.dtype and back[k].shape == t.shape, k
        assert back[k].numpy().tobytes() == t.numpy().tobytes(), k
    assert hg.nn.load_metadata(path) == {}


def test_the_file_is_safetensors(tmp_path):
    """Read back with nothing but the format's definition: header length, JSON, raw bytes."""
    w = hg.tensor([[1.0, 2.0], [3.0, 4.5]])
    path = tmp_path / "w.safetensors"
    hg.nn.save({"w": w}, path)
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    assert header["w"]["dtype"] == "F32" and header["w"]["shape"] == [2, 2]
    begin, end = header["w"]["data_offsets"]
    np.testing.assert_array_equal(np.frombuffer(raw[8 + n + begin:8 + n + end], "<f4").reshape(2, 2), w.numpy())


def test_load_errors_name_the_file_and_the_mismatch(tmp_path):
    small = hg.nn.Linear(3, 4)
    path = tmp_path / "lin.safetensors"
    hg.nn.save(small, path)
    with pytest.raises(hg.Error, match=r"load_parameters[\s\S]*weight: given \(4, 3\) float32, the module has \(5, 3\) float32"):
        hg.nn.load(path, hg.nn.Linear(3, 5))
    bad = tmp_path / "truncated.safetensors"
    bad.write_bytes(path.read_bytes()[:20])
    with pytest.raises(hg.Error, match="truncated.safetensors"):
        hg.nn.load(bad)
    with pytest.raises(hg.Error, match="does-not-exist"):
        hg.nn.load(tmp_path / "does-not-exist.safetensors")
