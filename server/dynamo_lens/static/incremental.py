"""Summaries of successive versions of one file that redo only what an edit touched: the editor's keystroke path.

:class:`FileSummarizer` keeps the last version's lines split into *blocks*: a top-level statement (with its
decorators, or several statements sharing a line) and the comment and blank lines after it, up to the next one. For
a new version it finds the lines that changed (the longest common prefix and suffix of the two versions), parses
again only the blocks around them, and moves the blocks below by the number of lines added or removed. The walk
(``static/walk.py``) is replayed for every block whose statements are still the same nodes and which starts with the
same names in scope, and so is the freezing of its classes and functions; compile sites and the checks then run over
the whole file as :func:`dynamo_lens.static.summarize` runs them.

Exactness: the result is always what :func:`~dynamo_lens.static.summarize` returns for the same text (the tests
compare the two over random edits of every fixture). A region that does not parse on its own (an edit that opens a
bracket, indents a top-level line, leaves a decorator without its ``def``) is not guessed at: the whole text is
summarised from scratch. Splicing is exact otherwise because every kept block starts at column 0 with a statement
that cannot continue the one before it (``else``, ``except`` and friends never start a block), and a region that
parses on its own ends with every bracket, string and compound statement closed: no statement of the new text
crosses a boundary the splice kept.
"""

from __future__ import annotations

import ast
import bisect
import gc
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from dynamo_lens import static
from dynamo_lens.static.context import FileContext, Scope
from dynamo_lens.static.positions import LineIndex, split_lines
from dynamo_lens.static.summary import FileSummary
from dynamo_lens.static.walk import BlockWalk, FinalNames, Walker


@dataclass(slots=True, eq=False)
class _Block:
    start: int
    """0-based index of its first line."""
    count: int
    """How many lines it spans: through the last line before the next block."""
    statements: list[ast.stmt]
    walk: BlockWalk | None = None
    positioned: list[ast.AST] | None = None
    """Every node of its statements that has a position, once the block has had to move."""

    def move(self, lines: int) -> None:
        """Move the block ``lines`` down (up when negative): its start and the positions of all its nodes."""
        self.start += lines
        if self.positioned is None:
            self.positioned = _positioned(self.statements)
        for node in self.positioned:
            node.lineno += lines  # type: ignore[attr-defined]
            end = node.end_lineno  # type: ignore[attr-defined]
            if end is not None:
                node.end_lineno = end + lines  # type: ignore[attr-defined]


class FileSummarizer:
    """Summarises versions of the file at ``path`` in the order they are given (thread-safe: one at a time)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._lines: list[str] = []
        self._blocks: list[_Block] | None = None
        """None when the last version was not parsed as a whole (a syntax error, a skipped file)."""
        self._module_scope: Scope | None = None
        self._names: FinalNames | None = None
        self.reused = (0, 0)
        """(blocks whose walk was replayed, blocks) in the last version: how much of it was not done again."""

    def summarize(self, text: str) -> FileSummary:
        """Exactly :func:`dynamo_lens.static.summarize` ``(path, text)``, reusing what the last version shares."""
        with self._lock:
            collecting = gc.isenabled()
            gc.disable()  # as in summarize: the walk allocates many objects and no cycles
            try:
                return self._summarize(text)
            except BaseException:
                self._blocks = None  # a half-spliced state must not be reused
                raise
            finally:
                if collecting:
                    gc.enable()

    def _summarize(self, text: str) -> FileSummary:
        text = text.removeprefix("\ufeff")
        self.reused = (0, 0)
        if not static.might_matter(text):
            self._blocks = None
            return FileSummary(self.path, skipped=True)
        lines = split_lines(text)
        blocks = self._splice(lines) if self._blocks else None
        if blocks is None:
            tree = _parse(text, 0)
            if tree is None:
                self._blocks = None
                return static.summarize(self.path, text)  # the syntax-error path, as it is without this module
            blocks = _blocks_of(tree.body, 0, len(lines))
        self._blocks = None
        try:
            summary = self._summarize_blocks(text, lines, blocks)
        except RecursionError:
            return FileSummary(self.path, error="RecursionError: expression nested too deeply to analyse")
        self._lines, self._blocks = lines, blocks
        return summary

    def _summarize_blocks(self, text: str, lines: list[str], blocks: Sequence[_Block]) -> FileSummary:
        tree = ast.Module(body=[statement for block in blocks for statement in block.statements], type_ignores=[])
        ctx = FileContext(self.path, text, tree, LineIndex(self.path, text, lines))
        walker = Walker(ctx, self._module_scope, self._names)
        self._module_scope = walker.module_scope
        for block in blocks:
            block.walk = walker.add(block.statements, block.walk)
        summary = static.summarize_walked(ctx, walker)
        self._names = walker.final_names
        self.reused = (walker.replayed, len(blocks))
        return summary

    def _splice(self, lines: list[str]) -> list[_Block] | None:
        """The blocks of ``lines``: the last version's, with the ones around the changed lines parsed again and
        the ones below moved; None when that region does not parse on its own."""
        old, blocks = self._lines, self._blocks
        assert blocks
        prefix = _common_prefix(old, lines)
        if prefix == len(old) == len(lines):
            return blocks
        suffix = _common_suffix(old, lines, min(len(old), len(lines)) - prefix)
        # The blocks holding the line before the change and the line after it: an edit at a block's edge may join
        # it to its neighbour (a line added to the end of a function, a decorator typed above a def).
        first = _block_at(blocks, max(prefix - 1, 0))
        last = _block_at(blocks, min(len(old) - suffix, len(old) - 1))
        start = blocks[first].start
        end = blocks[last].start + blocks[last].count
        delta = len(lines) - len(old)
        tree = _parse("".join(lines[start : end + delta]), start)
        if tree is None:
            return None
        below = blocks[last + 1 :]
        if delta:
            for block in below:
                block.move(delta)
        return [*blocks[:first], *_blocks_of(tree.body, start, end + delta), *below]


def _positioned(statements: list[ast.stmt]) -> list[ast.AST]:
    """The nodes under ``statements`` that carry a position (a tighter loop than ``ast.walk``: moving blocks is on
    the keystroke path)."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(statements)
    while stack:
        node = stack.pop()
        if "end_lineno" in node._attributes:
            found.append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                stack.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)
    return found


def _parse(text: str, first_line: int) -> ast.Module | None:
    """``text`` parsed as if it began on 0-based line ``first_line``; None when it does not parse."""
    try:
        with warnings.catch_warnings():  # SyntaxWarnings about the user's code are not ours to print
            warnings.simplefilter("ignore")
            return ast.parse("\n" * first_line + text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


SIMPLE_RUN = 32
"""Consecutive simple statements (assignments, expressions, imports) share a block, up to this many: walking a few
lines again costs less than keeping thousands of one-line blocks."""
_COMPOUND = (
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor, ast.While, ast.With,
    ast.AsyncWith, ast.Try, ast.Match, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)  # fmt: skip


def _blocks_of(statements: list[ast.stmt], start: int, end: int) -> list[_Block]:
    """Blocks for ``statements``, which fill the 0-based lines ``start`` to ``end`` (exclusive)."""
    groups: list[list[ast.stmt]] = []
    last_line = -1
    for statement in statements:
        previous = groups[-1] if groups else None
        if previous is not None and (
            _first_line(statement) <= last_line  # `a = 1; b = 2`: statements that share a line stay together
            or (
                len(previous) < SIMPLE_RUN
                and not isinstance(statement, _COMPOUND)
                and not isinstance(previous[-1], _COMPOUND)
            )
        ):
            previous.append(statement)
        else:
            groups.append([statement])
        last_line = max(last_line, statement.end_lineno or statement.lineno)
    if not groups:
        return [_Block(start, end - start, [])] if end > start else []
    starts = [start, *(_first_line(group[0]) - 1 for group in groups[1:]), end]
    return [_Block(starts[i], starts[i + 1] - starts[i], group) for i, group in enumerate(groups)]


def _first_line(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", None)
    return min(statement.lineno, *(d.lineno for d in decorators)) if decorators else statement.lineno


def _block_at(blocks: list[_Block], line: int) -> int:
    """Index of the block that holds 0-based ``line``."""
    return max(bisect.bisect_right(blocks, line, key=lambda block: block.start) - 1, 0)


def _common_prefix(a: list[str], b: list[str]) -> int:
    """How many leading lines ``a`` and ``b`` share (binary search over slice comparisons, which run in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: list[str], b: list[str], limit: int) -> int:
    """How many trailing lines ``a`` and ``b`` share, at most ``limit``."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle : len(a) - low] == b[len(b) - middle : len(b) - low]:
            low = middle
        else:
            high = middle - 1
    return low
