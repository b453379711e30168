"""Notebook cells as one module: IPython syntax neutralised line for line, and positions mapped back to cells."""

from __future__ import annotations

import ast

from dynamo_lens.model import CellRef, Span
from dynamo_lens.notebooks import Cell, locate_span, module_of_cells


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
