"""The data that crosses every boundary: findings, their locations and their fixes.

Both halves of Dynamo Lens (``static`` and ``runtime``) produce :class:`Finding` objects; the CLI and the language
server only render them. Nothing here knows about LSP or torch.

Position convention (the one place it is written down):

* ``line`` and ``column`` are **1-based**; ``column`` counts Unicode code points (characters), not bytes and not
  UTF-16 code units. ``end_column`` is exclusive (it points one past the last character), like ruff.
* ``lsp/positions.py`` converts these to LSP's 0-based UTF-16 positions; ``static`` converts ``ast``'s UTF-8 byte
  offsets to characters before building a :class:`Span`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dynamo_lens.torch_facts import PINNED, Release

FINDINGS_SCHEMA = "dynamo-lens.findings"
FINDINGS_SCHEMA_VERSION = 1

FindingSource = Literal["static", "runtime"]


class Severity(str, enum.Enum):
    """How loudly a finding is shown. Ordered from loudest to quietest."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    HINT = "hint"

    @property
    def rank(self) -> int:
        """0 for the loudest; useful for sorting and for ``--severity`` thresholds."""
        return list(Severity).index(self)


@dataclass(frozen=True, slots=True)
class CellRef:
    """The notebook cell a span's lines count in: its place among the notebook's cells (0-based, as nbformat and
    editors number them; None where a kernel cannot know it), and, in a kernel's run, the execution count of the
    run of the cell (``In [n]``) and the cell's id when the front end sent it."""

    index: int | None = None
    execution_count: int | None = None
    id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "execution_count": self.execution_count, "id": self.id}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CellRef:
        index, count, name = data.get("index"), data.get("execution_count"), data.get("id")
        return cls(
            index=int(index) if index is not None else None,
            execution_count=int(count) if count is not None else None,
            id=str(name) if name is not None else None,
        )

    def describe(self) -> str:
        """``cell 3`` (counted from 1, top to bottom), or ``In [5]`` where only the run of the cell is known."""
        if self.index is not None:
            return f"cell {self.index + 1}"
        return f"In [{self.execution_count}]" if self.execution_count is not None else "a cell"


@dataclass(frozen=True, slots=True)
class Span:
    """A range of text in one file (1-based lines and character columns; ``end_column`` exclusive)."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    cell: CellRef | None = None
    """In a notebook: the cell the lines count in (``notebooks.locate``; a kernel's report)."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
        }
        if self.cell is not None:
            data["cell"] = self.cell.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Span:
        line = int(data["line"])
        column = int(data.get("column", 1))
        return cls(
            path=str(data["path"]),
            line=line,
            column=column,
            end_line=int(data.get("end_line", line)),
            end_column=int(data.get("end_column", column)),
            cell=CellRef.from_json(data["cell"]) if isinstance(data.get("cell"), Mapping) else None,
        )


@dataclass(frozen=True, slots=True)
class Related:
    """Another place that explains a finding: the compile site, the ``__init__`` assignment, the read."""

    span: Span
    message: str

    def to_json(self) -> dict[str, Any]:
        return {**self.span.to_json(), "message": self.message}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Related:
        return cls(span=Span.from_json(data), message=str(data.get("message", "")))


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text in ``span`` by ``new_text`` (an empty span inserts)."""

    span: Span
    new_text: str

    def to_json(self) -> dict[str, Any]:
        return {**self.span.to_json(), "new_text": self.new_text}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Edit:
        return cls(span=Span.from_json(data), new_text=str(data["new_text"]))


@dataclass(frozen=True, slots=True)
class Fix:
    """A quick fix: an imperative title and the edits that carry it out.

    ``safe`` is False when the fix can change what the program computes (ruff's "unsafe fix"); editors still offer
    it, but never apply it in bulk. ``min_torch``/``max_torch`` bound the torch versions (``"2.5"``) it works on;
    ``None`` means unbounded.
    """

    title: str
    edits: tuple[Edit, ...]
    safe: bool = False
    min_torch: str | None = None
    max_torch: str | None = None

    def works_on(self, release: Release | None) -> bool:
        """Whether the fix works on ``release`` (major.minor, both bounds inclusive; an unknown torch counts as the
        pinned one)."""
        found = release or PINNED
        low, high = Release.parse(self.min_torch), Release.parse(self.max_torch)
        return (low is None or found >= low) and (high is None or found <= high)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "title": self.title,
            "safe": self.safe,
            "edits": [edit.to_json() for edit in self.edits],
        }
        if self.min_torch is not None:
            data["min_torch"] = self.min_torch
        if self.max_torch is not None:
            data["max_torch"] = self.max_torch
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fix:
        return cls(
            title=str(data["title"]),
            edits=tuple(Edit.from_json(e) for e in data.get("edits", ())),
            safe=bool(data.get("safe", False)),
            min_torch=data.get("min_torch"),
            max_torch=data.get("max_torch"),
        )


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing Dynamo Lens has to say about one place in the user's code."""

    code: str
    severity: Severity
    span: Span
    message: str
    source: FindingSource = "static"
    related: tuple[Related, ...] = ()
    fixes: tuple[Fix, ...] = ()
    # Free-form, JSON-serialisable facts for renderers (e.g. the attribute name, the compile id, "confirmed": 8).
    data: Mapping[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return self.span.path

    def sort_key(self) -> tuple[str, int, int, int, str]:
        cell = self.span.cell
        order = -1 if cell is None else cell.index if cell.index is not None else cell.execution_count or 0
        return (self.span.path, order, self.span.line, self.span.column, self.code)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity.value,
            **self.span.to_json(),
            "message": self.message,
            "source": self.source,
            "related": [r.to_json() for r in self.related],
            "fixes": [f.to_json() for f in self.fixes],
        }
        if self.data:
            out["data"] = dict(self.data)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        source = data.get("source", "static")
        if source not in ("static", "runtime"):
            raise ValueError(f"unknown finding source {source!r}")
        return cls(
            code=str(data["code"]),
            severity=Severity(data["severity"]),
            span=Span.from_json(data),
            message=str(data["message"]),
            source=source,
            related=tuple(Related.from_json(r) for r in data.get("related", ())),
            fixes=tuple(Fix.from_json(f) for f in data.get("fixes", ())),
            data=dict(data.get("data", {})),
        )


def gist(message: str) -> str:
    """The message up to its first ``": "`` outside parentheses and code: what happens, without the why
    (``x.item()` breaks the graph when compiled (torch 2.13: GB0124 …)`` stays whole)."""
    depth, code = 0, False
    for i, char in enumerate(message):
        if char == "`":
            code = not code
        elif code:
            continue
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif char == ":" and depth == 0 and message.startswith(": ", i):
            return message[:i]
    return message


def plural(count: int, noun: str) -> str:
    """``1 compile``, ``16 compiles``: a count in a message or a summary line."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


def findings_document(findings: Iterable[Finding]) -> dict[str, Any]:
    """The ``dynamo-lens.findings`` v1 JSON document (DESIGN.md §2)."""
    return {
        "schema": FINDINGS_SCHEMA,
        "version": FINDINGS_SCHEMA_VERSION,
        "findings": [f.to_json() for f in sorted(findings, key=Finding.sort_key)],
    }


def findings_from_document(document: Mapping[str, Any]) -> list[Finding]:
    """Inverse of :func:`findings_document`; rejects other schemas and newer versions."""
    if document.get("schema") != FINDINGS_SCHEMA:
        raise ValueError(f"not a {FINDINGS_SCHEMA} document: schema={document.get('schema')!r}")
    version = document.get("version")
    if not isinstance(version, int) or version > FINDINGS_SCHEMA_VERSION:
        raise ValueError(f"unsupported {FINDINGS_SCHEMA} version {version!r}")
    return [Finding.from_json(f) for f in document.get("findings", ())]
