#!/usr/bin/env python3
"""An independent reader for the safetensors files handgrad writes (stdlib only: struct + json).

It parses the file from the format's definition, not from handgrad's code, checks what the
safetensors library requires of a file (header length, space padding to 8 bytes, dtype, shape,
data_offsets that tile the data section exactly and end at the end of the file), and compares the
tensors of handgrad's fixture with values it recomputes here.

    HANDGRAD_ST_FIXTURE=/tmp/fx.safetensors build/tests/handgrad_tests -tc='*fixture*'
    python3 tests/nn/safetensors_check.py /tmp/fx.safetensors

Any other safetensors file can be given too; then only the format is checked (and the tensors
listed). Exit status 0 when every check passes.
"""
import json
import struct
import sys

DTYPES = {"F32": ("<f", 4), "F64": ("<d", 8), "I64": ("<q", 8), "BOOL": ("<?", 1)}


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def read(path):
    data = open(path, "rb").read()
    if len(data) < 8:
        fail(f"{len(data)} bytes: no room for the header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        fail(f"header length {n} exceeds the {len(data) - 8} bytes after it")
    raw = data[8 : 8 + n]
    if n % 8 != 0:
        fail(f"header length {n} is not a multiple of 8 (the safetensors library pads it)")
    text = raw.decode("utf-8")
    json_text = text.rstrip(" ")
    if not json_text.endswith("}") or len(text) - len(json_text) > 7:
        fail("the header is not a JSON object followed by at most 7 spaces of padding")
    header = json.loads(text)
    if not isinstance(header, dict):
        fail("header is not a JSON object")
    meta = header.pop("__metadata__", None)
    if meta is not None and not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        fail("__metadata__ is not a map of strings")
    body = data[8 + n :]
    tensors = {}
    spans = []
    for name, e in header.items():
        if set(e) != {"dtype", "shape", "data_offsets"}:
            fail(f"{name}: keys {sorted(e)}")
        if e["dtype"] not in DTYPES:
            fail(f"{name}: dtype {e['dtype']} is not one handgrad writes")
        fmt, size = DTYPES[e["dtype"]]
        shape = e["shape"]
        if not all(isinstance(d, int) and d >= 0 for d in shape):
            fail(f"{name}: shape {shape}")
        numel = 1
        for d in shape:
            numel *= d
        begin, end = e["data_offsets"]
        if end - begin != numel * size:
            fail(f"{name}: data_offsets {begin}, {end} do not hold {numel} x {size} bytes")
        spans.append((begin, end, name))
        values = [struct.unpack_from(fmt, body, begin + k * size)[0] for k in range(numel)]
        tensors[name] = (e["dtype"], shape, values)
    # The safetensors library requires the spans to tile the data section: no gap, no overlap.
    pos = 0
    for begin, end, name in sorted(spans):
        if begin != pos:
            fail(f"{name}: starts at {begin}, expected {pos} (gap or overlap)")
        pos = end
    if pos != len(body):
        fail(f"the spans end at {pos} but the data section has {len(body)} bytes")
    return meta or {}, tensors, [name for _, _, name in sorted(spans)]


def expected_fixture():
    """The values tests/nn/test_checkpoint.cpp writes into its fixture, recomputed."""
    f32 = [struct.unpack("<f", struct.pack("<f", 0.5 * k - 2.25))[0] for k in range(12)]
    f64 = [1.0 / (k + 3) for k in range(5)]
    i64 = [k * k * 1000003 - 7 for k in range(4)]
    b8 = [k % 3 == 0 for k in range(6)]
    return (
        {"producer": "handgrad", "step": "0"},
        {
            "blks.0.qkv.weight": ("F32", [3, 4], f32),
            "f64": ("F64", [5], f64),
            "ids": ("I64", [2, 2], i64),
            "mask": ("BOOL", [2, 1, 3], b8),
            "scalar": ("F32", [], [3.5]),
        },
    )


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    meta, tensors, order = read(sys.argv[1])
    for name in order:
        dtype, shape, values = tensors[name]
        print(f"{name:24s} {dtype:5s} {str(shape):12s} {values[:4]}{' ...' if len(values) > 4 else ''}")
    if meta:
        print(f"__metadata__ {meta}")
    if meta.get("producer") == "handgrad":
        want_meta, want = expected_fixture()
        if meta != want_meta:
            fail(f"metadata {meta} != {want_meta}")
        if tensors != want:
            fail(f"tensors differ from the fixture's: {tensors} vs {want}")
        if order != list(want):
            fail(f"data order {order} is not the order the tensors were given in")
        print("fixture: every value matches")
    print("OK")


if __name__ == "__main__":
    main()
