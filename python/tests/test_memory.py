"""Graphs built and dropped in a loop free what they hold: nodes, storage and process memory."""

import gc

import handgrad as hg
import handgrad.nn.functional as F


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def one_graph(i):
    q = hg.randn(4, 8, seed=i, requires_grad=True)
    w = hg.randn(8, 8, seed=i + 1, requires_grad=True)
    h = (q @ w).tanh()
    o = F.scaled_dot_product_attention(h, h, h, is_causal=True)
    loss = (o * o).mean() + F.cross_entropy(o, hg.tensor([0, 1, 2, 3]))
    loss.backward()
    return float(w.grad.sum())


def test_ten_thousand_graphs_leave_memory_flat():
    for i in range(500):  # warm up allocator pools and caches
        one_graph(i)
    gc.collect()
    nodes, held, rss = hg._C._live_nodes(), hg._C._live_bytes(), rss_bytes()
    for i in range(10_000):
        one_graph(i)
    gc.collect()
    assert hg._C._live_nodes() == nodes
    assert hg._C._live_bytes() == held
    growth = rss_bytes() - rss
    assert growth < 20 * 2**20, f"RSS grew by {growth / 2**20:.1f} MB over 10,000 graphs"


def test_numpy_views_keep_the_memory_alive():
    arrays = []
    held = hg._C._live_bytes()
    for _ in range(100):
        arrays.append(hg.ones(1000, dtype=hg.float64).numpy())
    assert hg._C._live_bytes() - held == 100 * 8000
    assert all(a.sum() == 1000.0 for a in arrays)
    arrays.clear()
    gc.collect()
    assert hg._C._live_bytes() == held
