"""Writes docs/rows.md from the op table: each public name, the checks its rows run (gradcheck,
gradgradcheck, fwdcheck, torch, or forward-only with why) and its sample labels; then the public
names that are not ops and the documented differences from PyTorch, which also make the last
section of docs/python.md (between its markers).

    python/.venv/bin/python python/tests/rows/docs.py

python/tests/test_rows.py fails when docs/rows.md or that section is not what this writes."""

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
DOC = HERE.parents[2] / "docs" / "rows.md"
PYTHON_MD = HERE.parents[2] / "docs" / "python.md"

SECTIONS = (("hg.linalg.", "`hg.linalg`"), ("hg.", "`hg`"), ("Tensor.", "`hg.Tensor` methods and properties"),
            ("F.", "`hg.nn.functional` (`F`)"))


def _checks(row):
    """What a row checks, in words."""
    if row.grad:
        parts = ["gradcheck"] + (["gradgradcheck"] if row.second_order else [])
        parts += ["fwdcheck"] if row.forward_ad else []
    else:
        parts = ["forward only"]
    if row.torch:
        parts.append("torch" if row.compare == "values" else "torch (shape and dtype)")
    if row.check is not None:
        parts.append("property")
    text = ", ".join(parts)
    missing = (not row.grad) or (not row.second_order) or (not row.forward_ad) or (not row.torch)
    return text + (f" — {row.why}" if missing and row.why else "")


def _cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def _section(name):
    for prefix, title in SECTIONS:
        if name.startswith(prefix):
            return title
    return "other"


def differences(rows):
    """(name, sample label or '', what) of every documented difference, in row order."""
    from rows import samples_of
    out = []
    for row in rows:
        if row.differs:
            out.append((row.name, "", row.differs))
        for s in samples_of(row):
            if s.differs:
                out.append((row.name, s.label, s.differs))
    return out


def render(rows):
    from rows import canonical, samples_of
    from rows.names import NOT_OPS
    by_name = {}
    for row in rows:
        for n in (row.name, *row.also):
            by_name.setdefault(canonical(n), []).append((row, n == row.name))
    lines = ["# The op table: every public name and its checks", "",
             "Generated from python/tests/rows/ by `python/.venv/bin/python python/tests/rows/docs.py`; "
             "python/tests/test_rows.py fails when this file is out of date. Each row runs float64 gradcheck, "
             "gradgradcheck and fwdcheck on its float64 samples (contiguous and non-contiguous), compares the "
             "forward on non-contiguous inputs with the contiguous one, holds its other names (`also`) to the same "
             "results, and compares the forward and float64 gradients with PyTorch's under one tolerance rule "
             "(python/tests/rows/__init__.py). \"via\" names the row that covers an alias or method.", ""]
    counts = (len(by_name), len(rows), sum(len(samples_of(r)) for r in rows))
    lines += [f"{counts[0]} public names in {counts[1]} rows with {counts[2]} samples; "
              f"{len(NOT_OPS)} public names are not ops (listed last).", ""]
    for _, title in SECTIONS:
        names = sorted(n for n in by_name if _section(n) == title)
        if not names:
            continue
        lines += [f"## {title}", "", "| name | via | checks | samples |", "|---|---|---|---|"]
        for name in names:
            for row, own in by_name[name]:
                via = "" if own else f"`{row.name}`"
                labels = ", ".join(s.label for s in samples_of(row))
                lines.append(f"| `{name}` | {via} | {_cell(_checks(row))} | {_cell(labels)} |")
        lines.append("")
    lines += ["## Public names that are not ops", "", "| name | why |", "|---|---|"]
    lines += [f"| `{n}` | {_cell(why)} |" for n, why in sorted(NOT_OPS.items())]
    lines += ["", "## Documented differences from PyTorch", "", DIFFERENCES_INTRO, ""] + difference_list(rows)
    return "\n".join(lines) + "\n"


DIFFERENCES_INTRO = ("Each is asserted by its row (python/tests/rows/): the test fails when handgrad stops differing, "
                     "so that the note is removed then.")


def difference_list(rows):
    """The documented differences as a Markdown list: each difference once, with the names and samples
    that show it."""
    grouped = {}
    for name, label, what in differences(rows):
        grouped.setdefault(what, {}).setdefault(name, []).append(label)
    lines = []
    for what, names in grouped.items():
        where = ", ".join(f"`{n}`" + (" (" + "; ".join(f"“{label}”" for label in labels if label) + ")"
                                      if any(labels) else "") for n, labels in names.items())
        lines.append(f"- {what}. Rows: {where}.")
    return lines


BEGIN = "<!-- begin: differences from the op table (python/tests/rows/docs.py writes this section) -->"
END = "<!-- end: differences from the op table -->"


def python_md_section(rows):
    return "\n".join([BEGIN, "## Differences from PyTorch that the op table asserts", "", DIFFERENCES_INTRO,
                      "The full table of public names and checks is [rows.md](rows.md).", ""]
                     + difference_list(rows) + [END])


def with_section(text, section):
    """text (docs/python.md) with the generated section replaced, or added at the end."""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        return head + section + rest.split(END, 1)[1]
    return text.rstrip("\n") + "\n\n" + section + "\n"


def main():
    if sys.path and pathlib.Path(sys.path[0]).resolve() == HERE:  # run as a script: import the package, not its files
        sys.path.pop(0)
    sys.path.insert(0, str(HERE.parent))
    from rows import load_rows
    rows = load_rows()
    DOC.write_text(render(rows))
    PYTHON_MD.write_text(with_section(PYTHON_MD.read_text(), python_md_section(rows)))
    print(f"wrote {DOC} and the op table's section of {PYTHON_MD}")


if __name__ == "__main__":
    main()
