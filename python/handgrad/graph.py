"""hg.to_dot and hg.draw: the graph that produced a tensor, as Graphviz draws it.

A notebook cell that ends in ``hg.draw(loss)`` shows the graph: the object it returns has
``_repr_svg_``, which Jupyter calls. Graphviz's ``dot`` renders it (Debian's graphviz package);
without it, ``draw`` raises an error that says so, and ``to_dot`` still gives the DOT text.
"""

import shutil
import subprocess

from . import _C
from ._C import Error, Tensor


def to_dot(tensor):
    """The graph that produced ``tensor`` as Graphviz DOT text: a box per recorded op (its
    outputs' shapes, what it saved for the backward), a rounded box per leaf that wants a
    gradient, an edge per input; the root drawn bold."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dot: expected a handgrad Tensor, got {type(tensor).__name__}")
    return _C._to_dot(tensor)


class Graph:
    """A drawn graph: ``source`` is the DOT text; ``svg()`` renders it; Jupyter shows it."""

    def __init__(self, source):
        self.source = source

    def svg(self):
        return render(self.source, "svg").decode("utf-8")

    def _repr_svg_(self):
        return self.svg()

    def save(self, path):
        """Writes the graph to ``path``: DOT for .dot or .gv, otherwise what the extension names
        (.svg, .png, .pdf) rendered by Graphviz."""
        path = str(path)
        ext = path.rsplit(".", 1)[-1].lower() if "." in path else ""
        if ext in ("dot", "gv"):
            data = self.source.encode("utf-8")
        elif ext in ("svg", "png", "pdf"):
            data = render(self.source, ext)
        else:
            raise Error(f"draw: can't tell the format of '{path}'; end the name in .dot, .gv, .svg, .png or .pdf")
        with open(path, "wb") as f:
            f.write(data)
        return path

    def __repr__(self):
        return f"<handgrad graph: {self.source.count('->')} edges; .svg() renders it, .source is its DOT>"


def render(source, fmt):
    dot = shutil.which("dot")
    if dot is None:
        raise Error("draw: Graphviz's 'dot' is not on PATH, so the graph can't be rendered; install Graphviz "
                    "(Debian: apt-get install graphviz), or use hg.to_dot(t) for the DOT text")
    run = subprocess.run([dot, f"-T{fmt}"], input=source.encode("utf-8"), capture_output=True, check=False)
    if run.returncode != 0:
        raise Error(f"draw: dot -T{fmt} failed ({run.returncode}): {run.stderr.decode(errors='replace').strip()}")
    return run.stdout


def draw(tensor):
    """The graph that produced ``tensor``, drawn: a notebook cell ending in ``hg.draw(loss)``
    shows it; ``hg.draw(loss).save('graph.svg')`` writes it."""
    return Graph(to_dot(tensor))
