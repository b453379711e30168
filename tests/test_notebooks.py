"""Notebook cells as one module: IPython syntax neutralised line for line, and positions mapped back to cells."""

from __future__ import annotations

import ast
import random

from dynamo_lens.model import CellRef, Span
from dynamo_lens.notebooks import Cell, is_kernel_cell_file, kernel_cell_name, locate_span, module_of_cells


def test_ipython_syntax_becomes_pass_and_keeps_every_line() -> None:
    source = (
        "%load_ext autoreload\n"
        "for name in names:\n"
        "    !echo $name\n"
        "    out = !ls\n"
        "torch.compile?\n"
        "%timeit f(1, \\\n"
        "    2)\n"
        "x = 1 + \\\n"
        "    2\n"
    )
    module = module_of_cells([(0, source)])
    assert module.text.splitlines() == [
        "pass",
        "for name in names:",
        "    pass",
        "    pass",
        "pass",
        "pass",
        "",
        "x = 1 + \\",
        "    2",
    ]
    ast.parse(module.text)


def test_cell_magics_blank_their_cell_unless_it_runs_python() -> None:
    module = module_of_cells([(1, "%%bash\nls (\n"), (2, "%%time\ny = f(2)\n"), (4, "z = 3")])
    assert module.text.splitlines() == ["", "", "", "y = f(2)", "z = 3"]
    assert module.cells == (Cell(1, 1, 2), Cell(2, 3, 2), Cell(4, 5, 1))


def test_spans_map_to_their_cell_and_stay_put_across_cells() -> None:
    cells = module_of_cells([(0, "a = 1\nb = 2\n"), (3, "c = 3\n")]).cells
    assert locate_span(Span("nb.ipynb", 3, 1, 3, 6), cells) == Span("nb.ipynb", 1, 1, 1, 6, cell=CellRef(3))
    assert locate_span(Span("nb.ipynb", 2, 1, 2, 6), cells) == Span("nb.ipynb", 2, 1, 2, 6, cell=CellRef(0))
    spanning = Span("nb.ipynb", 2, 1, 3, 2)
    assert locate_span(spanning, cells) == spanning  # across two cells: no one cell holds it


def test_kernel_cell_names_are_ipykernels() -> None:
    """The server finds the cell a kernel ran by the name ipykernel gives its file: the same hash of the text."""
    from ipykernel.compiler import get_file_name

    generator = random.Random(7)
    # characters of 1 to 4 UTF-8 bytes
    alphabet = "abc xyz\n\t(){}[]:=+#'\"\N{LATIN SMALL LETTER E WITH ACUTE}\N{EURO SIGN}\U0001d518"
    drawn = ("".join(generator.choices(alphabet, k=generator.randint(0, 64))) for _ in range(200))
    texts = ["", "x", "ab", "abc", "abcd", *drawn]
    for text in texts:
        assert kernel_cell_name(text) == get_file_name(text).rpartition("/")[2], text
        assert is_kernel_cell_file(get_file_name(text))
    for script in ("project/train.py", "project/123.py", "ipykernel_12/train.py"):  # a user's file, not a cell's
        assert not is_kernel_cell_file(script)
