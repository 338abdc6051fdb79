"""test_property.py's child interpreter: RUNNER makes each call of a batch (printing it first, so
that a crash names its call) and run_batch runs batches in children, a new one after a crash."""

import json
import os
import subprocess
import sys

CHILD_TIMEOUT_S = 30


RUNNER = r'''
import json, math, os, sys
try:
    import resource
    if not os.path.exists("/dev/nvidia0"):  # CUDA reserves address space; elsewhere, cap it
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
except Exception:
    pass
import numpy as np
import handgrad as hg
F = hg.nn.functional
DT = {"float32": hg.float32, "float64": hg.float64, "int64": hg.int64, "bool": hg.bool}

def T(shape, dtype="float32", grad=False, nc=False):
    """A tensor with values -1.5..1.5 (ints -3..3, bools), non-contiguous when nc."""
    shape = tuple(shape)
    v = np.arange(math.prod(shape)) % 7 - 3
    a = (v > 0) if dtype == "bool" else v if dtype == "int64" else v * 0.5
    a = a.reshape(shape)
    if nc and len(shape) >= 2:
        t = hg.tensor(np.ascontiguousarray(np.swapaxes(a, 0, 1)), dtype=DT[dtype]).transpose(0, 1)
    else:
        t = hg.tensor(a, dtype=DT[dtype])
    return t.requires_grad_() if grad else t

ALLOWED = (hg.Error, TypeError, IndexError, ValueError)
ns = {"hg": hg, "F": F, "np": np, "T": T, "nan": float("nan"), "inf": float("inf")}

def name_of(e):
    t = type(e)
    if isinstance(e, hg.Error):
        return "hg.IndexError" if isinstance(e, IndexError) else "hg.Error"
    return t.__name__ if t.__module__ == "builtins" else t.__module__ + "." + t.__qualname__

def touch(r, depth=0):
    """Reads a result back: the element count against the shape, a copy, the repr."""
    if isinstance(r, hg.Tensor):
        n, shape = r.numel(), r.shape
        if n != math.prod(shape) or any(s < 0 for s in shape):
            raise AssertionError(f"numel() {n} but shape {shape}")
        if n <= 10**6:
            r.detach().contiguous()
        if n <= 100:
            repr(r)
    elif isinstance(r, (list, tuple)) and depth < 2:
        for i in r[:8]:
            touch(i, depth + 1)

calls = json.loads(sys.stdin.read())
for k, code in calls:
    print("CALL", k, code, flush=True)
    try:
        try:
            if code.startswith("exec:"):
                exec(code[5:], ns)
                r = None
            else:
                r = eval(code, ns)
        except ALLOWED as e:
            print("RAISED", k, name_of(e), flush=True)
            continue
        try:
            touch(r)
        except ALLOWED as e:
            print("TOUCH", k, name_of(e), json.dumps(str(e)[:200]), flush=True)
            continue
        print("OK", k, flush=True)
    except BaseException as e:
        print("BAD", k, name_of(e), json.dumps(str(e)[:300]), flush=True)
print("END", flush=True)
'''


def run_batch(calls):
    """Runs [(k, code)] in children; {k: outcome}, where outcome is "ok", the name of an allowed
    exception, or ("bad" | "touch" | "crash" | "hang", detail). A crash names the call it died in
    and the rest runs in a new child."""
    results, todo = {}, list(calls)
    while todo:
        try:
            p = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(todo), capture_output=True, text=True,
                               timeout=CHILD_TIMEOUT_S, env=os.environ.copy())
            out, err, rc, hung = p.stdout, p.stderr, p.returncode, False
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
            rc, hung = None, True
        last, ended = None, False
        for line in out.splitlines():
            word, _, rest = line.partition(" ")
            if word == "CALL":
                last = int(rest.split(" ", 1)[0])
            elif word == "OK":
                results[int(rest)] = "ok"
            elif word == "RAISED":
                k, name = rest.split(" ", 1)
                results[int(k)] = name
            elif word in ("BAD", "TOUCH"):
                k, name, msg = rest.split(" ", 2)
                results[int(k)] = (word.lower(), f"{name}: {json.loads(msg)}")
            elif word == "END":
                ended = True
        if ended and rc == 0:
            break
        if last is None or last in results:  # died outside any call (at import, say)
            raise AssertionError(f"the child died outside a call (rc {rc}): {err[-2000:]}")
        why = "hang" if hung else "crash"
        detail = (f"no result within {CHILD_TIMEOUT_S} s" if hung else
                  f"exit status {rc}" + (f" (signal {-rc})" if rc is not None and rc < 0 else ""))
        tail = " | ".join(err.strip().splitlines()[-3:])
        results[last] = (why, detail + (f"; stderr: {tail[-400:]}" if tail else ""))
        todo = [(k, c) for k, c in todo if k > last]
    return results
