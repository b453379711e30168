"""Where the mark_dynamic fix is offered, and where it is not (it must never insert a line that cannot run).

The fix itself is proven by a real run in test_attribution.py: 8 compiles and the limit, then 1 compile.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from dynamo_lens.runtime.mark_dynamic_fix import mark_dynamic_fix

GUARD = "tensor 'x' size mismatch at index 1. expected 3, actual 4"


def _fix_for(tmp_path: Path, source: str, call_line: int, def_line: int = 4) -> str | None:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    fix = mark_dynamic_fix(GUARD, str(path), def_line, str(path), call_line)
    return None if fix is None else fix.edits[0].new_text


@pytest.mark.parametrize(
    ("source", "call_line", "expected"),
    [
        pytest.param(
            """
            import torch

            def f(y, x):
                return x + y
            for x_ in range(3):
                f(1, x_)
            """,
            7,
            "    torch._dynamo.mark_dynamic(x_, 1)\n",
            id="second positional argument",
        ),
        pytest.param(
            """
            import torch

            def f(y, *, x):
                return x + y
            out = f(1, x=batch)
            """,
            6,
            "torch._dynamo.mark_dynamic(batch, 1)\n",
            id="keyword-only parameter",
        ),
        pytest.param(
            """
            import torch

            @torch.compile
            def f(x):
                return x
            total = sum(
                f(batch),
            )
            """,
            8,
            "torch._dynamo.mark_dynamic(batch, 1)\n",
            id="decorated def; the call inside a statement spanning lines",
        ),
    ],
)
def test_the_marking_goes_before_the_calls_statement(
    tmp_path: Path, source: str, call_line: int, expected: str
) -> None:
    assert _fix_for(tmp_path, source, call_line) == expected


@pytest.mark.parametrize(
    ("source", "call_line"),
    [
        pytest.param("import torch\n\ndef f(x):\n    return x\nf(batch * 2)\n", 5, id="an expression, not a name"),
        pytest.param("import torch\n\ndef f(x):\n    return x\n[f(b) for b in batches]\n", 5, id="a comprehension"),
        pytest.param("from torch import nn\n\ndef f(x):\n    return x\nf(batch)\n", 5, id="torch not imported"),
        pytest.param("import torch\n\ndef f(x):\n    return x\nf(*args)\n", 5, id="starred arguments"),
    ],
)
def test_no_fix_where_the_line_before_could_not_run(tmp_path: Path, source: str, call_line: int) -> None:
    path = tmp_path / "script.py"
    path.write_text(source, encoding="utf-8")
    assert mark_dynamic_fix(GUARD, str(path), 3, str(path), call_line) is None


def _size(name: str, expected: int, actual: int) -> str:
    return f"tensor '{name}' size mismatch at index 1. expected {expected}, actual {actual}"


@pytest.mark.parametrize(
    ("guard", "earlier", "expected"),
    [
        (_size("x", 1, 4), (), "mark_unbacked"),
        (_size("x", 7, 8), (_size("x", 1, 2),), "mark_unbacked"),  # the first recompile specialised size 1
        (_size("x", 7, 8), (_size("y", 1, 2),), "mark_dynamic"),  # another argument's size
        (_size("x", 7, 8), (), "mark_dynamic"),
    ],
)
def test_sizes_of_zero_or_one_take_mark_unbacked(
    tmp_path: Path, guard: str, earlier: tuple[str, ...], expected: str
) -> None:
    path = tmp_path / "script.py"
    path.write_text("import torch\n\ndef f(x):\n    return x\nf(batch)\n", encoding="utf-8")
    fix = mark_dynamic_fix(guard, str(path), 3, str(path), 5, earlier)
    assert fix is not None and expected in fix.edits[0].new_text
    assert fix.min_torch == ("2.5" if expected == "mark_unbacked" else None)
