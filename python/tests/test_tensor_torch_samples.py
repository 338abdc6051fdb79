"""The forms PyTorch's own sample inputs (its OpInfo database) use, answered as torch answers them:
scatter's reduce=, matrix_rank's tensor tolerances and hermitian=, the casts' memory_format=,
repeat_interleave's tensor of counts and output_size=, index_add and index_fill on 0-d and bool
tensors, einsum's '...', diagonals, broadcasting and sublists, atleast_Nd of several tensors, cat's
legacy rule and promotion, take_along_dim's negative indices, tensordot's size-1 contraction and
int64 operands, isclose of bools, arange's bools and int64 steps, var and std over an empty dim;
and huge sizes refused before any allocation (tensor_split, tril_indices, triu_indices, arange).

References are NumPy or the formula (hard-coded where it is PyTorch's own rule), and torch itself
where it imports; gradients through float64 finite differences (hg.autograd.gradcheck).
"""
import numpy as np
import pytest

import handgrad as hg

try:
    import torch
except ImportError:
    torch = None

rng = np.random.default_rng(7)


def f64(a, grad=False):
    return hg.tensor(np.asarray(a, dtype=np.float64), dtype=hg.float64, requires_grad=grad)


def ints(a):
    return hg.tensor(np.asarray(a, dtype=np.int64))


# ---------------------------------------------------------------- huge sizes: refused before anything is made

def test_huge_section_counts_and_triangles_are_refused_at_once():
    x = f64(np.arange(6.0).reshape(2, 3))
    for sections in (2**31, 2**62, 2**63 - 1, 2**64):
        with pytest.raises(ValueError, match="sections"):
            hg.tensor_split(x, sections)
        with pytest.raises(ValueError, match="sections"):
            x.tensor_split(sections, 1)
    assert [p.shape for p in hg.tensor_split(x, 4, 1)] == [(2, 1), (2, 1), (2, 1), (2, 0)]  # past the size: empty
    for op, cases in ((hg.tril_indices, [(2**31, 2**31), (2**31 - 1, 4, 2**40), (4, 2**31, 2**31)]),
                      (hg.triu_indices, [(2**31, 2**31), (4, 2**31), (2**31 - 1, 2**31 - 1, -2**40)])):
        for args in cases + [(2**62, 2**62, -2**61), (2**63 - 1, 2**63 - 1)]:
            with pytest.raises(hg.Error, match="tril_indices|triu_indices"):
                op(*args)
    assert hg.tril_indices(2**62, 2**62, -2**62).shape == (2, 0)  # no position: nothing to make
    assert hg.tril_indices(3, 4, 2**63 - 1).shape == (2, 12) and hg.triu_indices(3, 4, -2**63).shape == (2, 12)
    for op in (hg.tril_indices, hg.triu_indices):
        with pytest.raises(ValueError, match="int64"):
            op(1, 2**63)  # PyTorch's arguments are int64
    assert hg.triu_indices(2**31 - 1, 4).shape == (2, 10)  # a tall matrix's upper triangle is small
    for huge in (2**62, 2**63, 1e30):
        with pytest.raises(hg.Error, match="arange"):
            hg.arange(huge)


@pytest.mark.parametrize("op", ["tril_indices", "triu_indices"])
def test_triangle_indices_equal_numpys(op):
    for row in range(5):
        for col in range(5):
            for offset in range(-6, 7):
                got = getattr(hg, op)(row, col, offset).numpy()
                want = np.stack(getattr(np, op)(row, offset, col)) if row and col else np.zeros((2, 0), int)
                assert got.dtype == np.int64 and np.array_equal(got, want.reshape(2, -1)), (op, row, col, offset)


# ---------------------------------------------------------------- scatter's reduce=

def _scatter_reference(x, dim, index, src, reduce):
    out = x.copy()
    for pos in np.ndindex(*index.shape):
        to = list(pos)
        to[dim] = index[pos]
        v = src[pos] if isinstance(src, np.ndarray) else src
        out[tuple(to)] = out[tuple(to)] + v if reduce == "add" else out[tuple(to)] * v
    return out


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_reduce_adds_or_multiplies_every_write(reduce):
    x, src = rng.normal(size=(4, 3)), rng.normal(size=(3, 3))
    index = np.array([[0, 1, 1], [0, 1, 1], [3, 1, 0]])  # repeated places
    for dim in (0, -2):
        got = hg.scatter(f64(x), dim, ints(index), f64(src), reduce=reduce)
        np.testing.assert_allclose(got.numpy(), _scatter_reference(x, 0, index, src, reduce), rtol=1e-13)
    got = f64(x).scatter(1, ints(index[:, :2] % 3), 2.5, reduce=reduce)  # a number: cast to x's dtype
    np.testing.assert_allclose(got.numpy(), _scatter_reference(x, 1, index[:, :2] % 3, 2.5, reduce), rtol=1e-13)
    assert hg.scatter(ints(3), 0, ints(0), 2.5, reduce=reduce).item() == (5 if reduce == "add" else 6)
    flags = hg.scatter(hg.tensor([True, False, True]), 0, ints([0, 1, 1]), hg.tensor([False, True, False]),
                       reduce=reduce)
    assert flags.tolist() == ([True, True, True] if reduce == "add" else [False, False, True])
    assert hg.autograd.gradcheck(lambda a, b: hg.scatter(a, 0, ints(index), b, reduce=reduce),
                                 (f64(x, True), f64(src, True)))
    assert hg.autograd.gradgradcheck(lambda a, b: hg.scatter(a, 0, ints(index), b, reduce=reduce),
                                     (f64(x, True), f64(src, True)))
    if torch is not None:
        want = torch.scatter(torch.tensor(x), 0, torch.tensor(index), torch.tensor(src), reduce=reduce)
        np.testing.assert_allclose(hg.scatter(f64(x), 0, ints(index), f64(src), reduce=reduce).numpy(), want.numpy(),
                                   rtol=1e-13)
    with pytest.raises(ValueError, match="reduce"):
        hg.scatter(f64(x), 0, ints(index), f64(src), reduce="mean")
    with pytest.raises(IndexError, match="out of range"):
        hg.scatter(f64(x), 1, ints(index), f64(src), reduce=reduce)


# ---------------------------------------------------------------- matrix_rank

def test_matrix_rank_tensor_tolerances_and_hermitian():
    a = rng.normal(size=(2, 4, 4))
    a[1, :, 0] = a[1, :, 1]  # rank 3
    s = np.linalg.svd(a, compute_uv=False)
    atol, rtol = np.array([0.5, 3.0]), np.array(0.1)
    want = (s > np.maximum(atol, rtol * s.max(-1))[:, None]).sum(-1)
    got = hg.linalg.matrix_rank(f64(a), atol=f64(atol), rtol=f64(rtol))
    assert got.dtype == hg.int64 and got.tolist() == want.tolist()
    assert hg.linalg.matrix_rank(f64(a), rtol=f64(1.0)).tolist() == [0, 0]  # σ > 1 · σ_max: none
    assert hg.linalg.matrix_rank(f64(a), atol=f64(np.ones((3, 1))) * 1e9).shape == (3, 2)  # broadcast with the batch
    assert hg.linalg.matrix_rank(f64(np.zeros((2, 0, 0))), atol=f64([1.0, 1.0])).tolist() == [0, 0]
    b = rng.normal(size=(5, 5))
    b[:, 0] = b[:, 1]  # not symmetric: hermitian=True reads the lower triangle, as NumPy's and PyTorch's
    assert hg.linalg.matrix_rank(f64(b), hermitian=True).item() == np.linalg.matrix_rank(b, hermitian=True)
    sym = b @ b.T
    sym[:, 4] = sym[:, 3]
    sym[4, :] = sym[3, :]
    assert hg.linalg.matrix_rank(f64(sym), hermitian=True).item() == 4
    with pytest.raises(hg.Error, match="square"):
        hg.linalg.matrix_rank(f64(a[:, :3]), hermitian=True)


# ---------------------------------------------------------------- casts with memory_format=

@pytest.mark.parametrize("name, dtype", [("double", "float64"), ("float", "float32"), ("long", "int64"),
                                         ("int", "int64"), ("bool", "bool")])
def test_casts_accept_memory_format(name, dtype):
    x = f64(np.array([[-1.5, 0.0], [2.0, 3.25]]))
    for fmt in (None, "contiguous_format", "preserve_format", "channels_last") + (
            (torch.contiguous_format, torch.channels_last) if torch is not None else ()):
        out = getattr(x, name)(memory_format=fmt)
        assert out.dtype == getattr(hg, dtype)
        assert out.tolist() == np.asarray(x.numpy()).astype(out.numpy().dtype).tolist()
    with pytest.raises(TypeError, match="memory_format"):
        getattr(x, name)(memory_format="sideways")


# ---------------------------------------------------------------- repeat_interleave

def test_repeat_interleave_with_a_tensor_of_counts():
    x = rng.normal(size=(2, 3, 4))
    got = hg.repeat_interleave(f64(x), ints([0, 1, 2]), dim=1)
    np.testing.assert_array_equal(got.numpy(), np.repeat(x, [0, 1, 2], axis=1))
    np.testing.assert_array_equal(f64(x).repeat_interleave(ints([2]), 2).numpy(), np.repeat(x, 2, axis=2))
    np.testing.assert_array_equal(hg.repeat_interleave(f64(x[0]), ints(3)).numpy(), np.repeat(x[0], 3))
    assert hg.repeat_interleave(f64(x[0, 0]), ints([1, 0, 2, 1]), output_size=4).shape == (4,)
    assert hg.repeat_interleave(ints([2, 0, 1])).tolist() == [0, 0, 2]  # the counts alone
    assert hg.repeat_interleave(hg.tensor([True, False]), 2).tolist() == [True, True, False, False]
    assert hg.autograd.gradcheck(lambda t: hg.repeat_interleave(t, ints([0, 1, 2]), dim=1, output_size=3),
                                 (f64(x, True),))
    with pytest.raises(hg.Error, match="output_size"):
        hg.repeat_interleave(f64(x), ints([0, 1, 2]), dim=1, output_size=4)
    with pytest.raises(hg.Error, match="counts"):
        hg.repeat_interleave(f64(x), ints([1, 2]), dim=1)
    with pytest.raises(ValueError, match="0 or more"):
        hg.repeat_interleave(f64(x), ints([1, -1, 2]), dim=1)


# ---------------------------------------------------------------- index_add, index_fill

def test_index_add_and_index_fill_on_0d_and_bool_tensors():
    assert hg.index_add(f64(2.0), 0, ints([0]), f64(5.0), alpha=2).item() == 12.0
    assert hg.index_add(f64(2.0), 0, ints(0), f64(5.0)).shape == ()
    assert hg.index_fill(f64(2.0), 0, ints(0), f64(5.0)).item() == 5.0
    assert hg.index_fill(f64(2.0), -1, ints([0]), 5.0).shape == ()
    assert hg.index_fill(hg.tensor([[True, False]]), -1, ints([1]), True).tolist() == [[True, True]]
    assert hg.index_fill(ints([1, 2, 3]), 0, ints([-1]), 2.7).tolist() == [1, 2, 2]  # negative; truncated
    assert hg.index_add(hg.tensor([True, False]), 0, ints([1, 1]), hg.tensor([True, False]), alpha=True).tolist() == \
        [True, True]
    assert hg.index_add(hg.tensor([True, False]), 0, ints([1]), hg.tensor([True]), alpha=False).tolist() == \
        [True, False]
    assert hg.index_add(ints([1, 1, 1]), 0, ints([0]), ints([5]), alpha=2.5).tolist() == [11, 1, 1]  # PyTorch's
    value = f64(3.0, True)
    hg.index_fill(f64(rng.normal(size=(2, 3, 4))), 1, ints([0, -1]), value).sum().backward()
    assert value.grad.item() == 16.0  # the filled places: 2 slices of 2 × 4
    x, src = rng.normal(size=(3, 4)), rng.normal(size=(3, 2))
    assert hg.autograd.gradcheck(lambda a, b: hg.index_add(a, 1, ints([3, 3]), b, alpha=-1.5),
                                 (f64(x, True), f64(src, True)))
    with pytest.raises(IndexError, match="out of range"):
        hg.index_fill(f64(x), 1, ints([4]), 0.0)
    with pytest.raises(hg.Error, match="do not fit"):
        hg.index_add(f64(2.0), 0, ints([0]), f64([5.0]))


# ---------------------------------------------------------------- einsum

@pytest.mark.parametrize("equation, shapes, spelled_out", [
    ("...ii->...i", [(2, 3, 3)], None), ("bii", [(2, 3, 3)], None), ("...ij,jk->...ik", [(2, 3, 3), (3, 4)], None),
    ("ij,jk", [(1, 3), (3, 4)], None), ("i...,i...->...", [(3, 4), (3, 4)], None), ("...", [(2, 3)], None),
    ("iji->j", [(1, 3, 1)], None), ("i...->...", [(3, 3)], None), ("ii", [(3, 3)], None), ("ij->", [(1, 3)], None),
    ("i,j", [(2,), (3,)], None), ("Ab,bA->", [(2, 3), (3, 2)], None),
    # '...' left out of the output: its dims are summed (NumPy refuses these; the letters spell them out)
    ("...ik,...j->ij", [(1, 2, 3), (3,)], "aik,j->ij"), ("b...,...k->bk", [(2, 3, 3), (3, 4)], "bxy,yk->bk")])
def test_einsum_ellipsis_diagonals_and_implicit_outputs(equation, shapes, spelled_out):
    ops = [rng.normal(size=s) for s in shapes]
    got = hg.einsum(equation, *[f64(o) for o in ops])
    np.testing.assert_allclose(got.numpy(), np.einsum(spelled_out or equation, *ops), rtol=1e-12)
    assert hg.autograd.gradcheck(lambda *xs: hg.einsum(equation, *xs), tuple(f64(o, True) for o in ops))
    if torch is not None:
        np.testing.assert_allclose(got.numpy(), torch.einsum(equation, *[torch.tensor(o) for o in ops]).numpy(),
                                   rtol=1e-12)


def test_einsum_broadcasts_a_size_1_dim_against_its_letter():
    x, y = rng.normal(size=(2, 1)), rng.normal(size=(3, 4))
    got = hg.einsum("ij,jk->ik", f64(x), f64(y))  # j is 1 in x and 3 in y: x's column meets every row of y
    np.testing.assert_allclose(got.numpy(), x * y.sum(0), rtol=1e-12)
    assert hg.autograd.gradcheck(lambda p, q: hg.einsum("ij,jk->ik", p, q), (f64(x, True), f64(y, True)))


def test_einsum_sublists_ints_and_refusals():
    a, b = rng.normal(size=(2, 3, 3)), rng.normal(size=(3, 4))
    np.testing.assert_allclose(hg.einsum(f64(a), [0, 1, 1]).numpy(), np.einsum("abb", a), rtol=1e-12)
    np.testing.assert_allclose(hg.einsum(f64(a), [Ellipsis, 1], f64(b), [1, 2], [Ellipsis, 2]).numpy(),
                               np.einsum("...b,bc->...c", a, b), rtol=1e-12)
    assert hg.einsum("ij,jk", ints([[1, 2], [3, 4]]), ints([[1, 0], [0, 1]])).tolist() == [[1, 2], [3, 4]]
    with pytest.raises(hg.Error, match="sizes differ"):
        hg.einsum("ii->i", f64(b))
    with pytest.raises(ValueError, match="does not fit"):
        hg.einsum("ij", f64(a))
    with pytest.raises(ValueError, match="no operand"):
        hg.einsum("ij->k", f64(b))
    with pytest.raises(hg.Error, match="sizes must match"):
        hg.einsum("ij,ij->i", f64(b), f64(b[:, :3]))


# ---------------------------------------------------------------- joins, take_along_dim, tensordot, isclose

def test_atleast_of_several_tensors_and_cats_legacy_rule():
    one, v, m = f64(1.5), f64([1.0, 2.0]), f64(np.ones((2, 3)))
    assert [t.shape for t in hg.atleast_1d(one, v)] == [(1,), (2,)]
    assert [t.shape for t in hg.atleast_2d([one, v, m])] == [(1, 1), (1, 2), (2, 3)]
    assert isinstance(hg.atleast_3d((v,)), tuple) and hg.atleast_3d((v,))[0].shape == (1, 2, 1)
    assert hg.atleast_3d(m).shape == (2, 3, 1)  # one tensor: a tensor
    empty = f64(np.zeros(0), True)
    joined = hg.cat([empty, m, empty], 1)  # a (0,) tensor is left out whatever the others' shapes
    assert joined.shape == (2, 3) and joined.tolist() == m.tolist()
    joined.sum().backward()
    assert empty.grad.shape == (0,)
    assert hg.cat([hg.zeros(0), hg.zeros(0)], 5).shape == (0,)
    assert hg.cat([hg.zeros(0, dtype=hg.float64), hg.ones(2, 3)], 1).dtype == hg.float64  # it still promotes
    assert hg.cat([ints([1]), hg.ones(1)]).dtype == hg.float32
    assert hg.cat([hg.tensor([True]), ints([2])]).tolist() == [1, 2]
    with pytest.raises(hg.Error, match="0-d"):
        hg.cat([one, v])


def test_take_along_dim_negative_indices_and_tensordot_broadcast():
    x = rng.normal(size=(2, 5))
    idx = np.array([[-1, -5, 0], [4, -2, -3]])
    got = hg.take_along_dim(f64(x), ints(idx), 1)
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(x, idx % 5, 1))
    with pytest.raises(IndexError, match="out of range"):
        hg.take_along_dim(f64(x), ints([[-6]]), 1)
    with pytest.raises(hg.Error):
        hg.take_along_dim(f64(x), ints([-1]))  # flattened: no wrap, as PyTorch's
    a, b = rng.normal(size=(1, 1, 1)), rng.normal(size=(2, 1, 2))
    got = hg.tensordot(f64(a), f64(b), dims=([0, 1], [2, 0]))  # size 1 against 2: b summed over it first
    np.testing.assert_allclose(got.numpy(), np.tensordot(a, b.sum((0, 2), keepdims=True), ([0, 1], [2, 0])),
                               rtol=1e-13)
    assert hg.autograd.gradcheck(lambda p, q: hg.tensordot(p, q, dims=([0, 1], [2, 0])), (f64(a, True), f64(b, True)))
    i1, i2 = rng.integers(-3, 3, (2, 2, 2)), rng.integers(-3, 3, (2, 2, 2))
    assert hg.tensordot(ints(i1), ints(i2), dims=2).tolist() == np.tensordot(i1, i2, 2).tolist()
    assert hg.mm(ints(i1[0]), ints(i2[0])).tolist() == (i1[0] @ i2[0]).tolist()
    with pytest.raises(hg.Error, match="contracted dims must match"):
        hg.tensordot(f64(b), f64(np.ones((3, 2))), dims=([0], [0]))


def test_isclose_of_bools_compares_them_as_numbers():
    a, b = hg.tensor([True, False, True]), hg.tensor([True, True, False])
    assert hg.isclose(a, b).tolist() == [True, False, False]
    assert hg.isclose(a, b, atol=2).tolist() == [True, True, True]
    assert a.isclose(hg.tensor(True)).tolist() == [True, False, True]
    assert hg.isclose(ints([2, 3]), ints([3, 3]), rtol=0.2, atol=0.5).tolist() == [True, True]


# ---------------------------------------------------------------- arange, var and std over an empty dim

def test_arange_reads_bools_and_truncates_an_int64_step():
    assert hg.arange(False, True, True).tolist() == [0] and hg.arange(True).dtype == hg.int64
    assert hg.arange(0.0, 3, True).tolist() == [0.0, 1.0, 2.0]
    # PyTorch's rule for an integer dtype with float arguments: the count from the floats, the values
    # start and step truncated (torch 2.15's answers)
    assert hg.arange(-0.9, 2.1, 2.0, dtype=hg.int64).tolist() == [0, 2]
    assert hg.arange(2.1, -2.9, -1.0, dtype=hg.int64).tolist() == [2, 1, 0, -1, -2]
    assert hg.arange(0.1, -7.9, -4.0, dtype=hg.int64).tolist() == [0, -4]
    assert hg.arange(0, 64, 0.5, dtype=hg.int64).tolist() == [0] * 128
    assert hg.arange(5, 0, -0.5, dtype=hg.int64).tolist() == [5] * 10
    np.testing.assert_allclose(hg.arange(1, 2, 0.25, dtype=hg.float64).numpy(), [1.0, 1.25, 1.5, 1.75])
    assert hg.arange(f64(3.0)).tolist() == [0.0, 1.0, 2.0]  # a 0-d tensor is its number
    assert hg.arange(0, 1e300, 1e300, dtype=hg.int64).tolist() == [0]  # one value: its step is never taken
    with pytest.raises(hg.Error, match="int64"):
        hg.arange(0, 1e300, 1e299, dtype=hg.int64)
    with pytest.raises(TypeError, match="hg.bool"):
        hg.arange(3, dtype=hg.bool)
    if torch is not None:
        for args, kw in (((-0.9, 2.1, 2.0), "int64"), ((0.5, 3.7, 0.3), "float64"), ((7,), None)):
            want = torch.arange(*args, **({"dtype": getattr(torch, kw)} if kw else {}))
            got = hg.arange(*args, **({"dtype": getattr(hg, kw)} if kw else {}))
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-15)


@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean"])
def test_spread_over_an_empty_dim_is_nan(name):
    for shape, dim in (((0,), None), ((0, 5), None), ((0, 5), 0)):
        out = getattr(hg, name)(hg.zeros(*shape, dtype=hg.float64), dim)
        first = out[0] if isinstance(out, tuple) else out
        assert first.shape == (() if dim is None else (5,)) and np.isnan(first.numpy()).all()
    assert getattr(hg, name)(hg.zeros(0, 5, dtype=hg.float64), 1)[0].shape == (0,) if name.endswith("mean") else True
