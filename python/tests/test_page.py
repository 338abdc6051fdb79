"""hg.to_html and hg.live_page: the pages from Python, checked against the library's own numbers."""
import json
import re

import pytest

import handgrad as hg


def page_data(document):
    """The JSON the step-through page's script reads (its <script id="hg-data">)."""
    m = re.search(r'<script id="hg-data" type="application/json">(.*?)</script>', document, re.S)
    return json.loads(m.group(1))


def small_graph():
    x = hg.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=hg.float64, requires_grad=True)
    x.name = "x"
    return x, (x.softmax(-1) * x).sum()


def test_to_html_is_a_page_of_the_backward():
    x, L = small_graph()
    page = hg.to_html(L, title="softmax times x")
    assert isinstance(page, str) and str(page).startswith("<iframe") and page._repr_html_() == str(page)
    doc = page.document
    assert doc.startswith("<!DOCTYPE html>") and "<title>softmax times x</title>" in doc
    data = page_data(doc)
    assert len(data) == 1 and data[0]["steps"]
    # Its backward ran (retain_graph): x.grad is filled, and the page's gradient of x is that.
    grads = [g for s in data[0]["steps"] for g in s["gin"] if g["label"] == "x"]
    assert grads and x.grad is not None
    whole = grads[-1].get("total", grads[-1]["values"])
    assert whole == pytest.approx(x.grad.reshape(-1).tolist(), abs=1e-15)
    assert all("fd" not in g for g in grads)  # no recompute given: no finite differences


def test_to_html_with_recompute_checks_each_gradient():
    x, L = small_graph()

    def recompute(name, value):
        if name != "x":
            return None
        return (value.softmax(-1) * value).sum()

    data = page_data(hg.to_html(L, recompute=recompute).document)
    checked = [g for s in data[0]["steps"] for g in s["gin"] if "ok" in g]
    assert checked and all(g["ok"] for g in checked)


def test_tensor_takes_a_name():
    assert hg.tensor([1.0, 2.0], name="Q").name == "Q"
    assert hg.tensor(1.0).name == ""
    with pytest.raises(TypeError, match="name must be a str"):
        hg.tensor([1.0], name=3)


def test_to_html_refuses_what_is_not_a_graph(tmp_path):
    with pytest.raises(TypeError):
        hg.to_html([1, 2])
    with pytest.raises(hg.Error, match="no graph"):
        hg.to_html(hg.tensor(1.0))
    _, L = small_graph()
    with pytest.raises(TypeError):
        hg.to_html(L, recompute=3)
    with pytest.raises(TypeError):
        hg.to_html(L, title=7)


def test_page_save_writes_the_document(tmp_path):
    _, L = small_graph()
    page = hg.to_html(L)
    path = page.save(tmp_path / "p.html")
    assert open(path, encoding="utf-8").read() == page.document


def test_live_page():
    if not hg.live_page_available():
        with pytest.raises(hg.Error, match="Emscripten"):
            hg.live_page()
        pytest.skip("no live page module in this build (the full build makes it with Emscripten)")
    page = hg.live_page()
    doc = page.document
    assert "handgradLive" in doc and "connect-src data:" in doc and "<iframe" in str(page)
    assert 'id="edit-Q"' in doc
    with pytest.raises(ValueError):
        hg.live_page(height=5)
    with pytest.raises(TypeError):
        hg.live_page(height="tall")


SCRIPT = '''\
import json, sys
import handgrad as hg


class Head(hg.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = hg.nn.Linear(2, 2)


model = Head()
x = hg.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
scores = model.proj(x)
weights = scores.softmax(-1)
L = (weights * x).sum()
page = hg.to_html(L)
json.dump({"document": page.document, "names_after": [x.name, scores.name, model.proj.weight.name]}, sys.stdout)
'''


def test_to_html_from_a_script_names_its_variables_parameters_and_lines(tmp_path):
    """Run as a learner's script: the page labels tensors by the script's variables and the
    Module's parameter paths, each step names the script's line, and the names do not outlive the page."""
    import os
    import subprocess
    import sys
    script = tmp_path / "learner.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(hg.__file__)), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    data = page_data(result["document"])[0]
    labels = {g["label"] for s in data["steps"] for g in s["gin"]} | {
        g["label"] for s in data["steps"] for g in s["gout"]}
    assert {"x", "scores", "weights", "proj.weight", "proj.bias"} <= labels, labels
    lines = {i + 1 for i, line in enumerate(SCRIPT.splitlines()) if "=" in line and "hg.to_html" not in line}
    sites = {s["site"] for s in data["steps"]}
    assert sites and all(re.fullmatch(r"learner\.py:(\d+)", site) for site in sites), sites
    assert {int(site.split(":")[1]) for site in sites} <= lines
    assert "learner.py:14" in sites and "learner.py:15" in sites  # softmax's line and the product's
    # No recompute: every whole gradient says it was not checked; none claims agreement.
    assert all("ok" not in g for s in data["steps"] for g in s["gin"])
    assert any(g.get("check", "").startswith("not checked") for s in data["steps"] for g in s["gin"])
    assert result["names_after"] == ["", "", "weight"]  # as before the page: the library names a Linear's weight
