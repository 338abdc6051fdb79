"""hg.to_dot and hg.draw: the graph's DOT names its ops and leaves; draw renders SVG for Jupyter."""

import shutil

import pytest

import handgrad as hg
import handgrad.nn.functional as F


def small_graph():
    q = hg.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=hg.float64, requires_grad=True).requires_grad_()
    q.name = "Q"
    o = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    return o[2, 1]


def test_to_dot_names_the_ops_and_the_leaves():
    dot = hg.to_dot(small_graph())
    assert dot.startswith("digraph")
    assert "attention" in dot and "Q" in dot and "select" in dot
    with pytest.raises(TypeError, match="to_dot: expected a handgrad Tensor"):
        hg.to_dot([1, 2])


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_draw_renders_svg_and_saves_by_extension(tmp_path):
    g = hg.draw(small_graph())
    svg = g._repr_svg_()
    assert svg.lstrip().startswith("<?xml") or "<svg" in svg[:400]
    assert "attention" in svg
    assert (tmp_path / "g.svg").exists() is False
    g.save(tmp_path / "g.svg")
    assert "<svg" in (tmp_path / "g.svg").read_text()
    g.save(tmp_path / "g.dot")
    assert (tmp_path / "g.dot").read_text() == g.source
    with pytest.raises(hg.Error, match=r"can't tell the format of .*g\.txt"):
        g.save(tmp_path / "g.txt")


def test_draw_without_graphviz_says_so(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    g = hg.draw(small_graph())
    assert g.source.startswith("digraph")  # the DOT text needs no Graphviz
    with pytest.raises(hg.Error, match="Graphviz's 'dot' is not on PATH.*hg.to_dot"):
        g.svg()
