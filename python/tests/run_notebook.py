"""Executes a notebook top to bottom in a fresh Jupyter kernel; a cell that raises fails the run.

    python run_notebook.py NOTEBOOK.ipynb KERNEL_DIR

The kernel is this interpreter (sys.executable) with the environment this process has (ctest sets
PYTHONPATH to the built package and HANDGRAD_NOTEBOOK_QUICK=1): a kernel spec named "handgrad" is
written under KERNEL_DIR and found through JUPYTER_PATH, so no user-wide Jupyter setup is needed.
Without nbclient, nbformat or ipykernel it prints "SKIPPED: <why>" and exits 0.
"""

import json
import os
import sys
import time


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: run_notebook.py NOTEBOOK.ipynb KERNEL_DIR")
    notebook, kernel_dir = sys.argv[1], sys.argv[2]
    missing = []
    for mod in ("nbformat", "nbclient", "ipykernel"):
        try:
            __import__(mod)
        except ImportError:
            missing.append(mod)
    if missing:
        print(f"SKIPPED: {', '.join(missing)} not importable by {sys.executable} "
              "(Debian: apt-get install python3-nbclient python3-ipykernel)")
        return 0
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    spec = os.path.join(kernel_dir, "kernels", "handgrad")
    os.makedirs(spec, exist_ok=True)
    with open(os.path.join(spec, "kernel.json"), "w") as f:
        json.dump({"argv": [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f",
                            "{connection_file}"],
                   "display_name": "Python (handgrad)", "language": "python"}, f)
    # the kernel runs in the notebook's folder: a relative PYTHONPATH must not change meaning there
    paths = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    os.environ["JUPYTER_PATH"] = kernel_dir + os.pathsep + os.environ.get("JUPYTER_PATH", "")
    os.environ.setdefault("MPLBACKEND", "Agg")

    nb = nbformat.read(notebook, as_version=4)
    start = time.time()
    client = NotebookClient(nb, kernel_name="handgrad", timeout=900,
                            resources={"metadata": {"path": os.path.dirname(os.path.abspath(notebook))}})
    try:
        client.execute()
    except CellExecutionError as e:
        print(f"{notebook}: a cell failed\n{e}")
        return 1
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                sys.stdout.write(out.get("text", ""))
    print(f"{notebook}: {sum(c.cell_type == 'code' for c in nb.cells)} code cells ran in {time.time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
