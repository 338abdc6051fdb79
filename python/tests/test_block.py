"""A whole transformer block from hg.nn: layer_norm and rms_norm against NumPy float64 formulas and
(where it imports) PyTorch, their hand-derived backward through hg's gradcheck, the block itself
gradchecked in float64 and trained on a small task, the modules' parameters, and the errors."""

import time

import numpy as np
import pytest

import handgrad as hg
import handgrad.nn.functional as F


def np_of(t):
    return np.array(t.detach().numpy(), dtype=np.float64)


def f64(*shape, seed, requires_grad=False):
    return hg.randn(*shape, seed=seed, dtype=hg.float64, requires_grad=requires_grad)


def np_norm(x, k, weight=None, bias=None, eps=1e-5, centre=True):
    """The trailing k dims of x normalized by the definition: centred (layer norm) or not (RMS)."""
    axes = tuple(range(x.ndim - k, x.ndim))
    xc = x - x.mean(axis=axes, keepdims=True) if centre else x
    y = xc / np.sqrt((xc * xc).mean(axis=axes, keepdims=True) + eps)
    return y * (1.0 if weight is None else weight) + (0.0 if bias is None else bias)


# ---------------------------------------------------------------- layer_norm and rms_norm

def test_layer_norm_and_rms_norm_match_the_numpy_formula():
    x, w, b = f64(2, 3, 4, seed=1), f64(3, 4, seed=2), f64(3, 4, seed=3)
    X, W, B = np_of(x), np_of(w), np_of(b)
    np.testing.assert_allclose(np_of(F.layer_norm(x, 4)), np_norm(X, 1), atol=1e-13)
    np.testing.assert_allclose(np_of(F.layer_norm(x, (3, 4), w, b, eps=0.1)), np_norm(X, 2, W, B, 0.1), atol=1e-13)
    np.testing.assert_allclose(np_of(F.layer_norm(x, [4], bias=b[0])), np_norm(X, 1, bias=B[0]), atol=1e-13)
    eps64 = np.finfo(np.float64).eps  # rms_norm's eps=None, as PyTorch's
    np.testing.assert_allclose(np_of(F.rms_norm(x, (4,), w[0])), np_norm(X, 1, W[0], eps=eps64, centre=False), atol=1e-13)
    np.testing.assert_allclose(np_of(F.rms_norm(x, (3, 4), w, eps=0.5)), np_norm(X, 2, W, eps=0.5, centre=False), atol=1e-13)
    # the modules are the functions with their parameters (weight ones and bias zeros at the start)
    ln, rms = hg.nn.LayerNorm(4, dtype=hg.float64), hg.nn.RMSNorm([3, 4], eps=1e-6, dtype=hg.float64)
    np.testing.assert_allclose(np_of(ln(x)), np_norm(X, 1), atol=1e-13)
    np.testing.assert_allclose(np_of(rms(x)), np_norm(X, 2, eps=1e-6, centre=False), atol=1e-13)


def test_the_hand_derived_backward_passes_gradcheck_and_gradgradcheck():
    x, w, b = f64(3, 5, seed=4, requires_grad=True), f64(5, seed=5, requires_grad=True), f64(5, seed=6, requires_grad=True)
    assert hg.autograd.gradcheck(lambda x, w, b: F.layer_norm(x, 5, w, b), (x, w, b))
    assert hg.autograd.gradgradcheck(lambda x, w, b: F.layer_norm(x, 5, w, b), (x, w, b))
    assert hg.autograd.gradcheck(lambda x, w: F.rms_norm(x, 5, w), (x, w))
    assert hg.autograd.gradgradcheck(lambda x, w: F.rms_norm(x, 5, w), (x, w))
    assert hg.autograd.fwdcheck(lambda x: F.layer_norm(x, (3, 5)), (x,))
    # a graph of one node per norm, named for the op
    assert F.layer_norm(x, 5, w, b).grad_fn.name() == "layer_norm"


def test_errors_name_the_op_and_the_shapes():
    x = hg.zeros(2, 3, 4)
    with pytest.raises(hg.Error, match=r"layer_norm: normalized_shape \(3,\) does not match the trailing dims"):
        F.layer_norm(x, 3)
    with pytest.raises(hg.Error, match=r"layer_norm: weight has shape \(3,\) but must have normalized_shape \(4,\)"):
        F.layer_norm(x, 4, hg.ones(3))
    with pytest.raises(hg.Error, match=r"layer_norm: bias has shape \(4, 1\)"):
        F.layer_norm(x, 4, None, hg.zeros(4, 1))
    with pytest.raises(hg.Error, match=r"rms_norm: an int64 tensor of shape \(2, 4\) is not floating point"):
        F.rms_norm(hg.zeros(2, 4, dtype=hg.int64), 4)
    with pytest.raises(hg.Error, match=r"rms_norm: eps is NaN"):
        F.rms_norm(x, 4, eps=float("nan"))
    with pytest.raises(hg.Error, match="layer_norm"):
        F.layer_norm(x, 4, hg.ones(4, dtype=hg.float64))  # weight of another dtype
    with pytest.raises(TypeError, match="normalized_shape"):
        F.layer_norm(x, None)
    with pytest.raises(ValueError, match="num_heads"):
        hg.nn.TransformerBlock(10, 3)


def test_layer_norm_and_rms_norm_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    X, W, B, G = (rng.standard_normal(s) for s in [(2, 3, 4), (3, 4), (3, 4), (2, 3, 4)])
    for k, shape in [(1, (4,)), (2, (3, 4))]:
        Wk, Bk = (W, B) if k == 2 else (W[0], B[0])
        for name in ["layer_norm", "rms_norm"]:
            outs = {}
            for m, f in [(hg, F), (torch, torch.nn.functional)]:
                x, w, b = (m.tensor(a, dtype=m.float64, requires_grad=True) for a in (X, Wk, Bk))
                y = f.layer_norm(x, shape, w, b) if name == "layer_norm" else f.rms_norm(x, shape, w)
                (y * m.tensor(G, dtype=m.float64)).sum().backward()
                outs[m.__name__] = [np_of(y) if m is hg else y.detach().numpy(), x.grad, w.grad]
                if name == "layer_norm":
                    outs[m.__name__].append(b.grad)
            mine, theirs = outs["handgrad"], outs["torch"]
            for a, b in zip(mine, theirs):
                np.testing.assert_allclose(np.asarray(a.numpy() if hasattr(a, "numpy") else a, dtype=np.float64),
                                           np.asarray(b.numpy() if hasattr(b, "numpy") else b), rtol=1e-10, atol=1e-12,
                                           err_msg=f"{name} over {shape}")


# ---------------------------------------------------------------- modules

def test_modules_register_parameters_as_pytorch_names_them():
    blk = hg.nn.TransformerBlock(8, 2, generator=hg.Generator(0))
    names = [n for n, _ in blk.named_parameters()]
    assert names == ["ln1.weight", "ln1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight", "attn.proj.bias",
                     "ln2.weight", "ln2.bias", "mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight", "mlp.fc2.bias"]
    assert tuple(blk.mlp.fc1.weight.shape) == (32, 8)  # d_hidden = 4 · d_model
    assert list(blk.state_dict()) == names
    assert [n for n, _ in hg.nn.LayerNorm(4, bias=False).named_parameters()] == ["weight"]
    assert list(hg.nn.LayerNorm(4, elementwise_affine=False).parameters()) == []
    assert [n for n, _ in hg.nn.RMSNorm(4).named_parameters()] == ["weight"]
    seq = hg.nn.Sequential(hg.nn.Linear(3, 5), hg.nn.ReLU(), hg.nn.Linear(5, 2))
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert len(seq) == 3 and isinstance(seq[1], hg.nn.ReLU) and len(seq[:2]) == 2
    stack = hg.nn.ModuleList([hg.nn.LayerNorm(3) for _ in range(2)])
    stack.append(hg.nn.RMSNorm(3))
    assert [n for n, _ in stack.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias", "2.weight"]
    assert len(stack) == 3 and isinstance(stack[2], hg.nn.RMSNorm)
    # to() converts every parameter in place, Python's and the library's alike
    w = blk.ln1.weight
    blk.double()
    assert blk.ln1.weight is w and w.dtype == hg.float64 and blk.mlp.fc2.weight.dtype == hg.float64
    assert blk(hg.randn(2, 4, 8, dtype=hg.float64)).dtype == hg.float64


def test_activations_dropout_and_one_hot():
    x = f64(3, 4, seed=8)
    np.testing.assert_allclose(np_of(hg.nn.ReLU()(x)), np.maximum(np_of(x), 0))
    np.testing.assert_allclose(np_of(hg.nn.GELU()(x)), np_of(F.gelu(x)))
    np.testing.assert_allclose(np_of(hg.nn.GELU("tanh")(x)), np_of(F.gelu(x, approximate="tanh")))
    mlp = hg.nn.MLP(4, 6, activation=hg.nn.ReLU(), dtype=hg.float64)
    np.testing.assert_allclose(np_of(mlp(x)), np_of(mlp.fc2(F.relu(mlp.fc1(x)))))
    # dropout: the input itself in eval mode and at p = 0; in training, zeros or x / (1 − p)
    drop = hg.nn.Dropout(0.25)
    ones = hg.ones(200, 50, dtype=hg.float64)
    hg.manual_seed(3)
    y = np_of(drop(ones))
    assert set(np.unique(y)) == {0.0, 1.0 / 0.75}
    assert abs((y == 0).mean() - 0.25) < 0.02
    assert drop.eval()(ones) is ones and hg.nn.Dropout(0.0)(ones) is ones
    assert F.dropout(ones, 0.5, training=False) is ones
    np.testing.assert_array_equal(np_of(F.dropout(ones, 1.0)), 0.0)
    with pytest.raises(ValueError, match="dropout: p must be a probability"):
        F.dropout(ones, 1.5)
    np.testing.assert_array_equal(F.one_hot(hg.tensor([2, 0, 1]), 4).numpy(), np.eye(4, dtype=np.int64)[[2, 0, 1]])
    assert tuple(F.one_hot(hg.tensor([[1, 3]])).shape) == (1, 2, 4)
    with pytest.raises(ValueError, match="one_hot"):
        F.one_hot(hg.tensor([0, 5]), 3)


# ---------------------------------------------------------------- the block

def test_transformer_block_is_pre_norm_attention_then_mlp():
    blk = hg.nn.TransformerBlock(8, 2, dtype=hg.float64, generator=hg.Generator(1))
    x = f64(2, 4, 8, seed=9)
    h = x + blk.attn(blk.ln1(x))
    np.testing.assert_allclose(np_of(blk(x)), np_of(h + blk.mlp(blk.ln2(h))), atol=1e-14)
    np.testing.assert_allclose(np_of(blk(x[0])), np_of(blk(x)[0]), atol=1e-14)  # unbatched (T, d)
    # causal: the first position's output does not move when later tokens do
    x2 = hg.tensor(np.concatenate([np_of(x)[:, :1], np_of(f64(2, 3, 8, seed=10))], axis=1))
    np.testing.assert_allclose(np_of(blk(x2))[:, 0], np_of(blk(x))[:, 0], atol=1e-14)


def test_gradcheck_through_the_whole_block_in_float64():
    blk = hg.nn.TransformerBlock(8, 2, dtype=hg.float64, generator=hg.Generator(2))
    x = f64(2, 4, 8, seed=11, requires_grad=True)
    assert hg.autograd.gradcheck(blk, (x,))
    # each parameter's gradient against a central difference of the loss at a few entries
    G = np_of(f64(2, 4, 8, seed=12))

    def loss():
        return float((blk(x) * hg.tensor(G)).sum().item())

    blk.zero_grad()
    (blk(x) * hg.tensor(G)).sum().backward()
    eps = 1e-6
    for name, p in blk.named_parameters():
        flat = p.detach().reshape(-1)
        grad = np_of(p.grad).reshape(-1)
        for i in (0, flat.shape[0] - 1):
            v = float(flat[i].item())
            with hg.no_grad():
                flat[i] = v + eps
                up = loss()
                flat[i] = v - eps
                down = loss()
                flat[i] = v
            assert abs((up - down) / (2 * eps) - grad[i]) < 1e-6 * max(1.0, abs(grad[i])), f"{name}[{i}]"


def test_a_block_and_a_linear_head_learn_to_copy_the_previous_token():
    # Target at position t: the token at t − 1. Only attention can fetch it (the MLP sees one
    # position), with a learned position table so that a head can find "the one before".
    V, d, T, B = 8, 32, 8, 32
    emb, pos = hg.nn.Embedding(V, d, generator=hg.Generator(3)), hg.nn.Embedding(T, d, generator=hg.Generator(7))
    blk = hg.nn.TransformerBlock(d, 2, generator=hg.Generator(4))
    head = hg.nn.Linear(d, V, generator=hg.Generator(5))
    opt = hg.optim.AdamW([p for m in (emb, pos, blk, head) for p in m.parameters()], lr=1e-2, weight_decay=0.0)
    gen, positions = hg.Generator(6), hg.arange(T)
    start = time.monotonic()
    losses = []
    for _ in range(60):
        tokens = hg.randint(0, V, (B, T), generator=gen)
        targets = np.full((B, T), -100, dtype=np.int64)  # position 0 has no previous token: ignored
        targets[:, 1:] = tokens.numpy()[:, :-1]
        logits = head(blk(emb(tokens) + pos(positions)))  # (B, T, V)
        loss = F.cross_entropy(logits.reshape(B * T, V), hg.tensor(targets).reshape(B * T))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses[::10]
    assert time.monotonic() - start < 30


def test_a_blocks_backward_steps_through_the_page_each_gradient_beside_its_difference():
    """hg.to_html takes the whole block's graph: layer norms, attention, the MLP, the residuals;
    with the parameters named by their paths and a recompute, every leaf's gradient on the page
    agrees with its float64 central difference."""
    hg.manual_seed(0)
    blk = hg.nn.TransformerBlock(8, 2, dtype=hg.float64)
    x = hg.randn(1, 4, 8, dtype=hg.float64, requires_grad=True)
    x.name = "x"
    params = dict(blk.named_parameters())
    for name, p in params.items():
        p.name = name
    leaves = dict(params, x=x)

    def recompute(name, value):
        if name not in leaves:
            return None
        t = leaves[name]
        with hg.no_grad():
            kept = t.detach().clone()
            t.copy_(value)
            out = blk(x).pow(2).mean()
            t.copy_(kept)
        return out

    page = hg.to_html(blk(x).pow(2).mean(), "a pre-norm block", recompute=recompute).document
    for op in ("layer_norm", "attention_qkv", "gelu", "ln1.weight", "mlp.fc2.bias"):
        assert op in page, op
    # one check per gradient the page shows into a leaf (x and the 12 parameters), none failing
    assert page.count('"ok":true') >= 10 and '"ok":false' not in page
