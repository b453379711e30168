"""The analyzer on input that real editors and repositories produce: half-typed code, absurd nesting, huge files,
bytes that are not UTF-8. Nothing raises; what can still be analysed still is."""

from __future__ import annotations

from pathlib import Path

import pytest

from dynamo_lens.model import Finding
from dynamo_lens.static import link, summarize

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "static"
PRINT_ITEM = (FIXTURES / "DL301_print_item.py").read_text(encoding="utf-8")


def findings_of(text: str, path: str = "/ws/bad.py") -> tuple[str | None, list[Finding]]:
    summary = summarize(path, text)
    return summary.error, link([summary])


def lines_of(findings: list[Finding], code: str) -> list[int]:
    return [f.span.line for f in findings if f.code == code]


def test_syntax_error_while_typing_keeps_the_findings_above_it() -> None:
    """The user is typing a new statement at the end of the compiled function's module."""
    text = PRINT_ITEM + "\nfor step in range(3:\n    normalise(x"
    error, findings = findings_of(text)
    assert error is not None and error.startswith("SyntaxError")
    assert lines_of(findings, "DL301") == [11, 12]


def test_syntax_error_inside_the_compiled_function() -> None:
    """A half-typed line in the middle of the function: no crash, and no finding invented past the error."""
    text = PRINT_ITEM.replace("    return y / (total + 1.0)", "    return y / (total +")
    error, findings = findings_of(text)
    assert error is not None and "SyntaxError" in error
    last_line = len(text.splitlines())
    assert all(f.span.line <= last_line for f in findings)


@pytest.mark.parametrize(
    "expression",
    [
        pytest.param("(" * 10_000 + "x" + ")" * 10_000, id="10k-parentheses"),
        pytest.param("+".join(["x"] * 100_000), id="100k-term-sum"),
        pytest.param("x" + ".a" * 50_000, id="50k-attribute-chain"),
        pytest.param("not " * 20_000 + "x", id="20k-not"),
        pytest.param("[" * 5_000 + "]" * 5_000, id="5k-nested-lists"),
    ],
)
def test_absurd_nesting_is_an_error_not_a_crash(expression: str) -> None:
    text = f"import torch\n\n@torch.compile\ndef f(x):\n    return {expression}\n"
    error, findings = findings_of(text)
    assert error is not None  # too deep for CPython's parser or for the analysis: said so, nothing raised
    assert findings == []


def test_deep_but_parseable_nesting_is_analysed() -> None:
    """50 nested calls around a graph break, inside 30 nested `if`s: still found, at the right line."""
    calls = "g(" * 50 + "x.item()" + ")" * 50
    ifs = "".join("    " * (i + 1) + "if flag:\n" for i in range(30))
    text = f"import torch\n\n@torch.compile\ndef f(x, flag: bool):\n{ifs}{'    ' * 31}return {calls}\n"
    error, findings = findings_of(text)
    assert error is None
    assert lines_of(findings, "DL301") == [35]


def test_fifty_thousand_line_file() -> None:
    """A generated 50,000-line module: one compiled function with a graph break every 5 lines."""
    header = "import torch\n\n@torch.compile(backend='eager')\ndef big(x):\n"
    block = "    y = x * 2\n    print(y.shape)\n    x = y + 1\n    z = x.sum()\n    x = x / 2\n"
    repeats = (50_000 - 5) // 5
    text = header + block * repeats + "    return x\n"
    assert len(text.splitlines()) >= 49_995
    error, findings = findings_of(text)
    assert error is None
    assert lines_of(findings, "DL301") == [5 + 5 * i + 1 for i in range(repeats)]


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(
            b"import torch\n@torch.compile\ndef f(x):\n    s = '\xff\xfe'\n    return x.item()\n", id="invalid-utf8"
        ),
        pytest.param(b"import torch\nx = 1\x00\n", id="null-byte"),
        pytest.param(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8, id="binary"),
        pytest.param(b"\xef\xbb\xbfimport torch\r\n@torch.compile\r\ndef f(x):\r\n    print(x)\r\n", id="bom-crlf"),
    ],
)
@pytest.mark.parametrize("errors", ["replace", "surrogateescape"])
def test_bytes_that_are_not_utf8(raw: bytes, errors: str) -> None:
    _, findings = findings_of(raw.decode("utf-8", errors))
    for finding in findings:
        assert finding.span.line >= 1


def test_bom_and_crlf_keep_positions() -> None:
    text = "\ufeffimport torch\r\n@torch.compile\r\ndef f(x):\r\n    print(x)\r\n"
    error, findings = findings_of(text)
    assert error is None
    [found] = [f for f in findings if f.code == "DL301"]
    assert (found.span.line, found.span.column) == (4, 5)


def test_columns_count_characters_not_bytes() -> None:
    """Non-ASCII text before the call: the column is in characters (1-based), the end exclusive."""
    text = "import torch\n\n@torch.compile\ndef f(y):\n    label = 'é𝔘'; s = y.sum().item()\n    return s\n"
    error, findings = findings_of(text)
    assert error is None
    [found] = [f for f in findings if f.code == "DL301"]
    line = text.splitlines()[4]
    start = line.index("y.sum()") + 1
    assert (found.span.line, found.span.column, found.span.end_column) == (5, start, start + len("y.sum().item()"))


def test_empty_and_whitespace_files() -> None:
    for text in ("", "\n", "   ", "\t\n\x0c\n", "#!/usr/bin/env python\n# only a comment\n"):
        _, findings = findings_of(text)
        assert findings == []
