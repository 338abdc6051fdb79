"""hg.to_html and hg.live_page: the backward pass as a page to step through, in a notebook or a file.

``hg.to_html(L)`` is the step-through page of any scalar's backward: its graph, a step control
walking the backward, each step's incoming and outgoing gradients (with central differences beside
them when ``recompute`` is given). ``hg.live_page()`` is the three-token example made live: Q, K
and V editable, every number recomputed in the browser by handgrad itself, built as WebAssembly.

Both return a ``Page``: a str holding an ``<iframe>`` of the page, so that a notebook cell ending in
it, or ``IPython.display.HTML(page)``, shows the page in a frame of its own (its script and style
apart from the notebook's); ``page.document`` is the whole HTML file and ``page.save(path)`` writes it.
"""

import html as _html

from . import _C
from ._C import Error, Tensor


class Page(str):
    """A page to show in a notebook (the str is an iframe holding it) or to save as a file."""

    def __new__(cls, document, height=900):
        if isinstance(height, bool) or not isinstance(height, int):
            raise TypeError(f"the page's height must be a whole number of pixels, got {type(height).__name__}")
        if not 100 <= height <= 10000:
            raise ValueError(f"the page's height must be from 100 to 10000 pixels, got {height}")
        frame = (f'<iframe srcdoc="{_html.escape(document, quote=True)}" '
                 f'style="width: 100%; height: {int(height)}px; border: 1px solid #d5dbe5"></iframe>')
        page = super().__new__(cls, frame)
        page.document = document
        return page

    def _repr_html_(self):
        return str(self)

    def save(self, path):
        """Writes the page as one self-contained HTML file (it opens offline, by double-click)."""
        with open(str(path), "w", encoding="utf-8") as f:
            f.write(self.document)
        return str(path)

    def __repr__(self):
        return f"<handgrad page: {len(self.document):,} characters; .save(path) writes it, a notebook shows it>"


def _caller_frame():
    """The innermost frame outside the handgrad package: the learner's code that called us."""
    import os
    import sys
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame = frame.f_back
    return frame


def _name_from(frame, named):
    """Names the caller's unnamed tensors, each appended to ``named`` with the name it had: a
    Module's parameters by their path ("fc.weight"), then the variables that hold tensors (locals
    before globals)."""
    from .nn.modules import Module
    if frame is None:
        return
    scopes = [frame.f_locals, frame.f_globals]

    def take(t, name, library_name=""):
        if isinstance(t, Tensor) and t.name in ("", library_name):
            named.append((t, t.name))
            t.name = name

    for scope in scopes:
        for value in list(scope.values()):
            if isinstance(value, Module):
                for path, p in value.named_parameters():
                    take(p, path, path.rsplit(".", 1)[-1])  # the library names a Linear's "weight"
    for scope in scopes:
        for var, value in list(scope.items()):
            if not var.startswith("_"):
                take(value, var)


def to_html(root, title="backward pass", recompute=None):
    """The step-through page of ``root``'s backward (a scalar with a graph). It runs the backward
    (retain_graph), so the leaves' .grad accumulate as after ``root.backward()``.

    Every tensor is labelled as your code knows it: by its ``.name`` (``hg.tensor(..., name="Q")``,
    or ``x.name = "Q"``), else by a Module's parameter path (``fc.weight``), else by the variable
    of the calling code that holds it; each step says which line of your code recorded it.

    ``recompute(name, value)``, when given, returns the root recomputed with the tensor named
    ``name`` (a leaf, or an intermediate you named) replaced by ``value`` (float64), or None where
    it cannot: the page then shows each gradient beside its central difference. Without it, the
    page says in grey that nothing was checked."""
    if not isinstance(root, Tensor):
        raise TypeError(f"to_html: expected a handgrad Tensor, got {type(root).__name__}")
    if not isinstance(title, str):
        raise TypeError(f"to_html: title must be a str, got {type(title).__name__}")
    if recompute is not None and not callable(recompute):
        raise TypeError("to_html: recompute must be a function (name, value) -> Tensor or None, "
                        f"got {type(recompute).__name__}")
    # The names last only while the page is written: the caller's tensors keep theirs (none).
    named = []
    try:
        _name_from(_caller_frame(), named)
        return Page(_C._to_html(root, title, recompute))
    finally:
        for t, name in reversed(named):
            t.name = name


def live_page(height=900):
    """The live three-token page: edit Q, K and V and watch every number of the backward recompute,
    each beside its central difference (handgrad itself runs in the page, as WebAssembly). Needs
    the full build made with Emscripten installed; raises hg.Error saying so otherwise."""
    return Page(_C._live_page(), height)


def live_page_available():
    """Whether this build has the live page's module (the full build makes it with Emscripten)."""
    import os
    return bool(_C._live_module_path) and os.path.exists(_C._live_module_path)


__all__ = ["Page", "to_html", "live_page", "live_page_available", "Error"]
