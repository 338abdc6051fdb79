"""hg.nn's modules and hg.optim: values against NumPy float64 formulas, parameters shared with the
C++ library (gradients and in-place updates visible), training lowers the loss, errors."""

import numpy as np
import pytest

import handgrad as hg
import handgrad.nn.functional as F


def np_of(t):
    return np.array(t.detach().numpy(), dtype=np.float64)


def seeded(seed=0):
    return hg.Generator(seed)


# ---------------------------------------------------------------- Linear and Embedding

def test_linear_forward_and_gradients_match_numpy():
    lin = hg.nn.Linear(3, 4, dtype=hg.float64, generator=seeded(1))
    x = hg.randn(5, 3, seed=2, dtype=hg.float64, requires_grad=True)
    y = lin(x)
    W, b, X = np_of(lin.weight), np_of(lin.bias), np_of(x)
    np.testing.assert_allclose(np_of(y), X @ W.T + b, rtol=0, atol=1e-14)
    G = np.arange(20, dtype=np.float64).reshape(5, 4) / 7  # dL/dy for L = <y, G>
    (y * hg.tensor(G)).sum().backward()
    np.testing.assert_allclose(np_of(lin.weight.grad), G.T @ X, atol=1e-13)
    np.testing.assert_allclose(np_of(lin.bias.grad), G.sum(0), atol=1e-13)
    np.testing.assert_allclose(np_of(x.grad), G @ W, atol=1e-13)


def test_linear_init_and_no_bias():
    lin = hg.nn.Linear(16, 8, bias=False, generator=seeded(3))
    assert lin.bias is None and lin.in_features == 16 and lin.out_features == 8
    assert lin.weight.shape == (8, 16) and lin.weight.dtype == hg.float32
    w = np_of(lin.weight)
    assert np.abs(w).max() <= 1 / np.sqrt(16) and w.std() > 0.05  # uniform in ±1/sqrt(in), PyTorch's bound
    assert [n for n, _ in lin.named_parameters()] == ["weight"]
    x = hg.randn(2, 16, seed=4)
    np.testing.assert_allclose(np_of(lin(x)), np_of(x) @ w.T, rtol=1e-5, atol=1e-6)


def test_embedding_forward_and_gradient_match_numpy():
    emb = hg.nn.Embedding(6, 3, dtype=hg.float64, generator=seeded(5))
    assert emb.num_embeddings == 6 and emb.embedding_dim == 3
    W = np_of(emb.weight)
    assert abs(W.std() - 0.02) < 0.015  # N(0, 0.02²)
    idx = np.array([[0, 5, 5], [2, 0, 1]])
    out = emb(hg.tensor(idx))
    np.testing.assert_array_equal(np_of(out), W[idx])
    G = np.random.default_rng(0).standard_normal((2, 3, 3))
    (out * hg.tensor(G)).sum().backward()
    expected = np.zeros_like(W)
    np.add.at(expected, idx.reshape(-1), G.reshape(-1, 3))  # repeated rows accumulate
    np.testing.assert_allclose(np_of(emb.weight.grad), expected, atol=1e-14)


def test_same_generator_seed_same_weights():
    a = hg.nn.Linear(4, 4, generator=seeded(7))
    b = hg.nn.Linear(4, 4, generator=seeded(7))
    np.testing.assert_array_equal(np_of(a.weight), np_of(b.weight))
    hg.manual_seed(11)
    c = hg.nn.Linear(4, 4)
    hg.manual_seed(11)
    d = hg.nn.Linear(4, 4)
    np.testing.assert_array_equal(np_of(c.weight), np_of(d.weight))


# ---------------------------------------------------------------- Module

class TwoLayer(hg.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = hg.nn.Linear(3, 5, dtype=hg.float64, generator=seeded(1))
        self.scale = hg.nn.Parameter(hg.ones(5, dtype=hg.float64))
        self.fc2 = hg.nn.Linear(5, 2, bias=False, dtype=hg.float64, generator=seeded(2))
        self.not_a_parameter = hg.zeros(2)  # does not require grad

    def forward(self, x):
        return self.fc2(self.fc1(x).tanh() * self.scale)


def test_module_registers_parameters_in_order():
    m = TwoLayer()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert len(list(m.parameters())) == 4
    assert [n for n, _ in m.named_modules()] == ["", "fc1", "fc2"]
    assert list(m.children())[0] is m.fc1
    assert "fc1" in repr(m) and "in_features=3" in repr(m)


def test_module_train_eval_zero_grad():
    m = TwoLayer()
    assert m.training and m.fc1.training
    assert m.eval() is m and not m.training and not m.fc2.training
    m.train()
    assert m.training and m.fc2.training
    m(hg.randn(4, 3, seed=0, dtype=hg.float64)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    assert all(np.all(np_of(p.grad) == 0) for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_module_without_super_init_says_so():
    class Broken(hg.nn.Module):
        def __init__(self):
            self.fc = hg.nn.Linear(2, 2)

    with pytest.raises(AttributeError, match=r"super\(\).__init__\(\)"):
        Broken()
    with pytest.raises(NotImplementedError, match="forward"):
        hg.nn.Module()(1)


def test_state_dict_round_trip_and_mismatch():
    a, b = TwoLayer(), TwoLayer()
    with hg.no_grad():
        b.scale.fill_(3.0)
    b.load_state_dict(a.state_dict())
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(np_of(p), np_of(q), err_msg=n)
    bad = dict(a.state_dict())
    bad.pop("fc2.weight")
    bad["extra"] = hg.zeros(1)
    with pytest.raises(hg.Error, match=r"missing: fc2.weight[\s\S]*unexpected: extra"):
        b.load_state_dict(bad)


# ---------------------------------------------------------------- parameters are the library's tensors

def test_parameters_are_the_same_tensors_python_sees():
    model = hg.nn.TinyCharLM(16, num_hiddens=8, num_heads=2, num_blks=1, generator=seeded(0))
    named = dict(model.named_parameters())
    assert list(named) == ["token_emb.weight", "blks.0.qkv.weight", "blks.0.proj.weight"]
    E = model.token_emb.weight
    assert E.data_ptr() == named["token_emb.weight"].data_ptr()
    assert model.blks[0]["qkv"].weight.data_ptr() == named["blks.0.qkv.weight"].data_ptr()
    with pytest.raises(NotImplementedError, match="call the model"):  # a block runs inside its model
        model.blks[0](hg.ones(1, 2, 8))
    x, L = hg.nn.repeated_batch(2, 8, 16, 2, 4, generator=seeded(1))
    F.cross_entropy(model(x[:, :-1]).reshape(-1, 16), x[:, 1:].reshape(-1)).backward()
    assert E.grad is not None and np.abs(np_of(E.grad)).max() > 0  # the C++ backward's gradient, seen here
    before = np_of(E)
    opt = hg.optim.SGD(model.parameters(), lr=0.5)
    opt.step()
    np.testing.assert_allclose(np_of(E), before - 0.5 * np_of(E.grad), rtol=1e-6, atol=1e-7)  # in place, seen here
    with hg.no_grad():
        E.zero_()  # an update from Python is what the model computes with
    assert np.all(np_of(model(x[:, :-1])) == 0)


# ---------------------------------------------------------------- TinyCharLM

def softmax_np(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_tinycharlm_forward_matches_numpy_without_positions():
    V, d, H = 11, 8, 2
    model = hg.nn.TinyCharLM(V, num_hiddens=d, num_heads=H, num_blks=1, pos="none", dtype=hg.float64,
                             generator=seeded(3))
    assert (model.vocab_size, model.num_hiddens, model.num_heads, model.num_blks) == (V, d, H, 1)
    with hg.no_grad():  # larger weights than the init, so the attention is far from uniform
        for p in model.parameters():
            p.copy_(p * 30.0)
    x = np.array([[1, 4, 4, 0, 9], [2, 2, 7, 3, 1]])
    E = np_of(model.token_emb.weight)
    Wqkv, Wo = np_of(model.blks[0]["qkv"].weight), np_of(model.blks[0]["proj"].weight)
    h = E[x]                                      # (B, T, d)
    qkv = h @ Wqkv.T                              # (B, T, 3d)
    dh = d // H
    heads = qkv.reshape(2, 5, 3, H, dh).transpose(2, 0, 3, 1, 4)  # (3, B, H, T, dh)
    q, k, v = heads
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh)
    s = np.where(np.tril(np.ones((5, 5), bool)), s, -np.inf)
    P = softmax_np(s)                             # (B, H, T, T)
    o = (P @ v).transpose(0, 2, 1, 3).reshape(2, 5, d)
    logits = (h + o @ Wo.T) @ E.T
    got = model(hg.tensor(x))
    assert got.shape == (2, 5, V)
    np.testing.assert_allclose(np_of(got), logits, rtol=0, atol=1e-12)
    maps = model.attention_weights(hg.tensor(x))
    assert len(maps) == 1 and maps[0].shape == (2, H, 5, 5) and maps[0].grad_fn is None
    np.testing.assert_allclose(np_of(maps[0]), P, rtol=0, atol=1e-13)


def test_tinycharlm_text_circuit_ranks():
    """The text's first cell: W_QK and W_OV of head 0 are (128, 128) of rank 32."""
    model = hg.nn.TinyCharLM(vocab_size=64, pos="rope", generator=seeded(0))
    D = model.token_emb.weight.shape[1]
    d_h = D // model.num_heads
    W = np_of(model.blks[0]["qkv"].weight)
    W_q, W_k, W_v = W[:D], W[D:2 * D], W[2 * D:]
    W_o = np_of(model.blks[0]["proj"].weight)
    W_QK = W_q[:d_h].T @ W_k[:d_h]
    W_OV = W_o[:, :d_h] @ W_v[:d_h]
    for M in (W_QK, W_OV):
        assert M.shape == (128, 128) and np.linalg.matrix_rank(M) == 32


def test_tinycharlm_positions_ablation_forward_with():
    x, _ = hg.nn.repeated_batch(2, 10, 12, 3, 5, generator=seeded(2))
    for pos in ("rope", "alibi", "learned", "sinusoidal", "none"):
        m = hg.nn.TinyCharLM(12, num_hiddens=16, num_heads=2, num_blks=2, pos=pos, max_len=16, generator=seeded(0))
        assert m(x).shape == (2, 10, 12), pos
        assert (m.pos_emb is not None) == (pos == "learned")
    base = np_of(m(x))
    m.ablate_head(1, 0)
    assert m.is_ablated(1, 0) and not np.allclose(np_of(m(x)), base)
    m.clear_ablations()
    np.testing.assert_array_equal(np_of(m(x)), base)
    params = [p.detach().clone().requires_grad_() for p in m.parameters()]
    out = m.forward_with(x, params)
    np.testing.assert_array_equal(np_of(out), base)
    out.sum().backward()
    assert params[0].grad is not None and m.token_emb.weight.grad is None


def test_tinycharlm_errors_name_the_op_and_shapes():
    m = hg.nn.TinyCharLM(8, num_hiddens=8, num_heads=2, num_blks=1, generator=seeded(0))
    with pytest.raises(hg.Error, match=r"TinyCharLM: tokens a float32 tensor of shape \(2, 3\) must be int64 \(B, T\)"):
        m(hg.zeros(2, 3))
    with pytest.raises(hg.Error, match="not divisible by heads = 4"):
        hg.nn.TinyCharLM(8, num_hiddens=30, num_heads=4)
    with pytest.raises(hg.Error, match="unknown positional scheme 'spiral'"):
        hg.nn.TinyCharLM(8, num_hiddens=8, num_heads=2, pos="spiral")
    with pytest.raises(hg.Error, match="ablate_head.*block 5 head 0"):
        m.ablate_head(5, 0)
    lin = hg.nn.Linear(3, 4)
    with pytest.raises(hg.Error, match=r"Linear.*\(2, 5\).*3 features"):
        lin(hg.zeros(2, 5))


# ---------------------------------------------------------------- the repeated-sequence task

def test_repeated_batch_tiles_patterns():
    x, L = hg.nn.repeated_batch(64, 40, 10, 5, 8, generator=seeded(0))
    assert x.shape == (64, 40) and L.shape == (64,) and x.dtype == hg.int64 and L.dtype == hg.int64
    X, Ls = x.numpy(), L.numpy()
    assert Ls.min() >= 5 and Ls.max() <= 8 and len(set(Ls.tolist())) > 1
    assert X.min() >= 0 and X.max() < 10
    for b in range(64):
        np.testing.assert_array_equal(X[b], X[b, np.arange(40) % Ls[b]])
    y, M = hg.nn.repeated_batch(64, 40, 10, 5, 8, generator=seeded(0))
    np.testing.assert_array_equal(y.numpy(), X)
    with pytest.raises(hg.Error, match="Lmin = 9, Lmax = 8"):
        hg.nn.repeated_batch(2, 10, 10, 9, 8)


def test_split_losses_match_numpy():
    logits = hg.randn(3, 7, 5, seed=1, dtype=hg.float64, requires_grad=True)
    Y = hg.tensor([[0, 1, 2, 3, 4, 0, 1], [4, 4, 4, 4, 4, 4, 4], [1, 0, 1, 0, 1, 0, 1]])
    L = hg.tensor([3, 1, 8])
    r = hg.nn.split_losses(logits, Y, L)
    first, rep, loss = r
    z = np_of(logits)
    lse = np.log(np.exp(z).sum(-1))
    ce = lse - np.take_along_axis(z, Y.numpy()[..., None], -1)[..., 0]   # (B, T)
    later = np.arange(1, 8)[None, :] >= L.numpy()[:, None]
    np.testing.assert_allclose(first.item(), ce[~later].mean(), atol=1e-12)
    np.testing.assert_allclose(rep.item(), ce[later].mean(), atol=1e-12)
    np.testing.assert_allclose(loss.item(), ce.mean(), atol=1e-12)
    acc = (z.argmax(-1) == Y.numpy())[later].mean()
    np.testing.assert_allclose(r.later_acc, acc, atol=1e-12)
    assert (r.n_first, r.n_later) == ((~later).sum(), later.sum())
    assert "SplitLosses(first=" in repr(r)
    loss.backward()
    assert logits.grad.shape == (3, 7, 5)
    per_pos = hg.nn.accuracy_per_position(logits, Y)
    np.testing.assert_allclose(per_pos, (z.argmax(-1) == Y.numpy()).mean(0), atol=1e-12)
    with pytest.raises(hg.Error, match=r"split_losses: targets an int64 tensor of shape \(3, 6\) must be int64 \(B, T\) = \(3, 7\)"):
        hg.nn.split_losses(logits, Y[:, :6], L)


def test_training_a_few_steps_lowers_the_loss():
    """The fixed-period task (the text's shortcut experiment, small): 100 AdamW steps take the
    later-copy loss from chance (ln 16 = 2.77) to well under half of it."""
    hg.manual_seed(0)
    model = hg.nn.TinyCharLM(vocab_size=16, num_hiddens=32, num_heads=2, num_blks=1, pos="rope", bias=True)
    opt = hg.optim.AdamW(model.parameters(), lr=3e-2, weight_decay=0.0)
    later = []
    for _ in range(100):
        x, L = hg.nn.repeated_batch(32, 16, 16, 4, 4)
        first, rep, loss = hg.nn.split_losses(model(x[:, :-1]), x[:, 1:], L)
        opt.zero_grad()
        loss.backward()
        opt.step()
        later.append(rep.item())
    assert abs(later[0] - np.log(16)) < 0.05
    assert np.mean(later[-10:]) < 0.5 * np.log(16), later


# ---------------------------------------------------------------- the rest of the public names

def test_every_public_name_is_there():
    for name in hg.nn.__all__:
        assert hasattr(hg.nn, name), name
    for name in hg.optim.__all__:
        assert hasattr(hg.optim, name), name
    assert issubclass(hg.optim.AdamW, hg.optim.Optimizer) and issubclass(hg.optim.SGD, hg.optim.Optimizer)


def test_to_dtype_keeps_each_parameter_and_the_optimizer_sees_it():
    model = hg.nn.TinyCharLM(12, num_hiddens=8, num_heads=2, num_blks=1, generator=seeded(0))
    E = model.token_emb.weight
    opt = hg.optim.SGD(model.parameters(), lr=0.1)
    assert model.double() is model
    assert E.dtype == hg.float64 and all(p.dtype == hg.float64 for p in model.parameters())
    x, _ = hg.nn.repeated_batch(2, 6, 12, 2, 3, generator=seeded(1))
    assert model(x).dtype == hg.float64
    model(x).sum().backward()
    before = np_of(E)
    opt.step()  # built before the move, it updates the moved tensors
    assert not np.array_equal(np_of(E), before)
    assert model.float() is model and E.dtype == hg.float32
    assert model.cpu() is model
    if not hg.cuda_is_available():
        with pytest.raises(hg.Error, match="CUDA"):
            hg.nn.Linear(2, 2).cuda()


def test_python_module_parameters_and_requires_grad():
    m = TwoLayer()
    m.register_parameter("offset", hg.zeros(2, dtype=hg.float64))
    assert "offset" in dict(m.named_parameters()) and m.offset.requires_grad
    assert m.requires_grad_(False) is m and not any(p.requires_grad for p in m.parameters())
    offset = m.offset
    assert m.to(hg.float32) is m and m.offset is offset and offset.dtype == hg.float32  # converted in place
    assert not offset.requires_grad  # and still frozen
    del m.offset
    assert "offset" not in dict(m.named_parameters())


def test_two_threads_train_two_models_as_one_thread_does():
    """Forward, backward and step run without the GIL: two threads training their own models
    concurrently give bit for bit what each gives alone."""
    import threading

    def run(seed, out):
        g = hg.Generator(seed)
        model = hg.nn.TinyCharLM(16, num_hiddens=16, num_heads=2, num_blks=2, generator=g)
        opt = hg.optim.AdamW(model.parameters(), lr=1e-2)
        for _ in range(5):
            x, L = hg.nn.repeated_batch(8, 12, 16, 3, 5, generator=g)
            _, _, loss = hg.nn.split_losses(model(x[:, :-1]), x[:, 1:], L)
            opt.zero_grad()
            loss.backward()
            opt.step()
        out[seed] = [np_of(p) for p in model.parameters()]

    alone, together = {}, {}
    run(1, alone)
    run(2, alone)
    threads = [threading.Thread(target=run, args=(s, together)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in (1, 2):
        for a, b in zip(alone[s], together[s]):
            np.testing.assert_array_equal(a, b)
