"""The public names the op table must cover, and the public names that are not ops (NOT_OPS, each
with its reason). python/tests/test_rows.py fails on a public name that is in neither."""

import types

import handgrad as hg

# Public names that are not ops, each with the reason. Every other public name must have rows.
NOT_OPS = {
    **{f"hg.{n}": "a dtype (hg.float32 ...), not a function" for n in
       ("bool", "double", "float", "float32", "float64", "int64", "long")},
    **{f"hg.{n}": "one of PyTorch's dtypes that handgrad does not build: a name, refused on use "
                  "(test_pytorch_names.py)" for n in
       ("bfloat16", "cdouble", "cfloat", "complex128", "complex64", "float16", "half", "int16", "int32", "int8",
        "short", "uint8")},
    "hg.get_default_dtype": "the factories' default float dtype (test_pytorch_names.py, against torch)",
    "hg.set_default_dtype": "sets the factories' default float dtype (test_pytorch_names.py, against torch)",
    "hg.save": "writes a tensor or a state dict to a file (test_pytorch_names.py)",
    "hg.load": "reads what hg.save wrote (test_pytorch_names.py)",
    "hg.cuda_is_available": "a flag: whether this build and machine have CUDA",
    "hg.is_grad_enabled": "a flag: grad mode (test_autograd.py)",
    "hg.manual_seed": "seeds the default generator; the rows of the random factories reseed with it before each "
                      "call, and the function and method forms must then draw the same",
    "hg.draw": "draws the graph with Graphviz (test_graph.py)",
    "hg.to_dot": "the graph as Graphviz DOT text (test_graph.py)",
    "hg.to_html": "the step-through page of a backward (test_page.py)",
    "hg.live_page": "the live three-token page (test_page.py)",
    "hg.live_page_available": "a flag: whether this build has the live page's module",
    "Tensor.backward": "runs the backward (test_autograd.py; every grad row goes through it)",
    "Tensor.register_hook": "registers a gradient hook (test_hooks.py)",
    "Tensor.retain_grad": "keeps a non-leaf's gradient (test_hooks.py)",
    "Tensor.requires_grad_": "sets the requires-grad flag (every grad row uses it)",
    "Tensor.requires_grad": "a flag",
    "Tensor.is_leaf": "a flag",
    "Tensor.is_cuda": "a flag: whether the tensor is on the GPU",
    "Tensor.grad": "the accumulated gradient (every grad row reads it through autograd.grad)",
    "Tensor.grad_fn": "the node that made the tensor (test_graph.py)",
    "Tensor.name": "a label the graph drawings show",
    "Tensor.data_ptr": "the address of the tensor's memory",
    "Tensor.device": "a property: the tensor's device",
    "Tensor.dtype": "a property: the tensor's dtype (compared by every row)",
    "Tensor.shape": "a property: the tensor's shape (compared by every row)",
    "Tensor.ndim": "a property: the number of dims (Tensor.dim has rows)",
    "Tensor.cuda": "a copy on the GPU (the GPU tests; no GPU here)",
}


def public_names():
    """hg's public functions (not modules, classes or dunder names), hg.Tensor's public methods and
    properties, hg.nn.functional.__all__ and hg.linalg.__all__, spelled as rows spell them."""
    names = set()
    for n in dir(hg):
        obj = getattr(hg, n)
        if n.startswith("_") or isinstance(obj, (types.ModuleType, type)):
            continue
        names.add(f"hg.{n}")
    names |= {f"Tensor.{n}" for n in dir(hg.Tensor) if not n.startswith("_")}
    names |= {f"F.{n}" for n in hg.nn.functional.__all__}
    names |= {f"hg.linalg.{n}" for n in hg.linalg.__all__}
    return names
