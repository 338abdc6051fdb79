"""Ctrl-C during a long library call raises KeyboardInterrupt within about a second."""

import os
import signal
import threading
import time

import pytest

import handgrad as hg


def long_graph(layers):
    x = hg.randn(256, 256, seed=0, dtype=hg.float64, requires_grad=True)
    h = x
    for _ in range(layers):
        h = (h @ x).tanh()
    return h.sum()


def timed_backward(layers):
    loss = long_graph(layers)
    start = time.monotonic()
    loss.backward(retain_graph=True)
    return loss, time.monotonic() - start


def interrupt_after(seconds, stamp):
    def fire():
        stamp.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)
    timer = threading.Timer(seconds, fire)
    timer.start()
    return timer


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals reach the main thread only")
def test_ctrl_c_ends_a_long_backward():
    loss, whole = timed_backward(20)  # how long a backward takes here, to size one of about 2 s
    loss, whole = timed_backward(max(20, int(20 * 2.0 / max(whole, 1e-3))))
    assert whole > 0.5, f"the backward took {whole:.2f} s, too short to interrupt"
    fired = []
    timer = interrupt_after(min(0.2, whole / 4), fired)
    try:
        with pytest.raises(KeyboardInterrupt):
            loss.backward()
        late = time.monotonic() - fired[0]
    finally:
        timer.cancel()
    assert late < 1.0, f"KeyboardInterrupt came {late:.2f} s after the signal"


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals reach the main thread only")
def test_ctrl_c_ends_a_gradcheck():
    x = hg.randn(4000, seed=3, dtype=hg.float64, requires_grad=True)
    fired = []
    timer = interrupt_after(0.3, fired)
    try:
        with pytest.raises(KeyboardInterrupt):
            hg.autograd.gradcheck(lambda t: (t * t).tanh(), [x], noncontiguous=False)
        late = time.monotonic() - fired[0]
    finally:
        timer.cancel()
    assert late < 1.0
