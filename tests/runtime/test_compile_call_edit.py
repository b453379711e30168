"""The keyword a fix adds to the user's compile call: the edited file must parse and mean what the fix says."""

from __future__ import annotations

import ast

import pytest

from dynamo_lens.model import Edit
from dynamo_lens.runtime.compile_call_edit import add_keyword


def applied(source: str, edit: Edit) -> str:
    lines = source.splitlines(keepends=True)
    start = sum(len(line) for line in lines[: edit.span.line - 1]) + edit.span.column - 1
    end = sum(len(line) for line in lines[: edit.span.end_line - 1]) + edit.span.end_column - 1
    return source[:start] + edit.new_text + source[end:]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("m = torch.compile(model)\n", "m = torch.compile(model, dynamic=True)\n"),
        ("m = torch.compile()\n", "m = torch.compile(dynamic=True)\n"),
        ("m = torch.compile(model, dynamic=False)\n", "m = torch.compile(model, dynamic=True)\n"),
        ("m = torch.compile(Model(), )\n", "m = torch.compile(Model(), dynamic=True, )\n"),
        (
            "m = torch.compile(\n    model,\n    backend='eager',\n)\n",
            "m = torch.compile(\n    model,\n    backend='eager', dynamic=True,\n)\n",
        ),
        ("@torch.compile\ndef f(x):\n    return x\n", "@torch.compile(dynamic=True)\ndef f(x):\n    return x\n"),
        ("model.compile()\n", "model.compile(dynamic=True)\n"),
        ("m = wrap(torch.compile(M('é')))\n", "m = wrap(torch.compile(M('é'), dynamic=True))\n"),  # byte columns
        ("p = re.compile('x'); m = torch.compile(m)\n", "p = re.compile('x'); m = torch.compile(m, dynamic=True)\n"),
        ("p = re.compile('x'); model.compile()\n", "p = re.compile('x'); model.compile(dynamic=True)\n"),
    ],
)  # fmt: skip
def test_the_keyword_goes_where_it_parses_and_applies(code: str, expected: str) -> None:
    source = f"import re\nimport torch\n{code}"
    edit = add_keyword("m.py", 3, source, "dynamic", "True")
    assert edit is not None
    result = applied(source, edit)
    ast.parse(result)
    assert result == f"import re\nimport torch\n{expected}"


@pytest.mark.parametrize(
    "code",
    [
        "m = torch.compile(model, dynamic=True)\n",  # nothing to change
        "m = torch.compile(model, **settings)\n",  # it may hold the keyword already
        "a, b = torch.compile(m1), torch.compile(m2)\n",  # which one the run meant is not known
        "pattern = re.compile('x')\n",  # the compile of another imported module
        "m = torch.jit.script(model)\n",
    ],
)
def test_nothing_is_offered_where_the_edit_could_be_wrong(code: str) -> None:
    assert add_keyword("m.py", 3, f"import re\nimport torch\n{code}", "dynamic", "True") is None


def test_refused_keywords_and_files_without_import_torch() -> None:
    source = "import torch\n\nm = torch.compile(model, mode='max-autotune')\n"
    assert add_keyword("m.py", 3, source, "options", "{}", refuse=("mode", "options")) is None
    assert add_keyword("m.py", 2, "import torch as t\nm = t.compile(model)\n", "dynamic", "True") is None
