"""The editor's incremental summaries (``static/incremental.py``): after any sequence of edits, a
:class:`FileSummarizer` gives exactly what ``summarize`` gives for the same text, while redoing only the blocks an
edit touched."""

from __future__ import annotations

import random
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sources import CORPUS, FIXTURE_TEXTS, TOKENS, edit_a_line

from dynamo_lens.static import link, summarize
from dynamo_lens.static.incremental import FileSummarizer

PATH = "/ws/model.py"

MODEL = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.steps = 0
            self.proj = nn.Linear(4, 4)

        def forward(self, x):
            self.steps += 1
            return self.proj(x) * 2


    def helper(x):
        return x.sum()


    SCALE = 1.0
    model = torch.compile(Counter())
    """
)


def versions(summarizer: FileSummarizer, *texts: str) -> None:
    """Feed ``texts`` in order, checking each against a from-scratch summary."""
    for text in texts:
        assert summarizer.summarize(text) == summarize(PATH, text)


def test_an_edit_inside_forward_walks_only_its_class_again() -> None:
    summarizer = FileSummarizer(PATH)
    edited = MODEL.replace("self.steps += 1", "self.steps += 2")
    versions(summarizer, MODEL, edited)
    replayed, blocks = summarizer.reused
    assert blocks >= 4 and replayed == blocks - 1
    assert [f.code for f in link([summarizer.summarize(edited)])] == ["DL101", "DL001"]


def test_lines_added_above_move_every_span_below() -> None:
    summarizer = FileSummarizer(PATH)
    moved = MODEL.replace("from torch import nn\n", "from torch import nn\n\n# a comment\n\n")
    versions(summarizer, MODEL, moved, MODEL)
    assert summarizer.reused[0] == summarizer.reused[1] - 1  # moved back: the walks of the blocks below are kept
    (finding,) = [f for f in link([summarizer.summarize(moved)]) if f.code == "DL101"]
    assert finding.span.line == MODEL.splitlines().index("        self.steps += 1") + 1 + 3


def test_a_new_import_walks_every_block_again() -> None:
    summarizer = FileSummarizer(PATH)
    versions(summarizer, MODEL, "import functools\n" + MODEL)
    assert summarizer.reused[0] == 0


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("SCALE = 1.0\n", "@torch.compile\nSCALE = 1.0\n"),  # a decorator typed above a statement: no longer parses
        ("def helper(x):\n", "def helper(x):\n    '''doc'''\n"),  # a line added at the end of a block's header
        ("    return x.sum()\n", "    return x.sum()\n    y = 2\n"),  # a line added at the end of a function
        ("SCALE = 1.0\n", "    SCALE = 1.0\n"),  # a top-level line indented: joins nothing, does not parse
        ("SCALE = 1.0\n", "SCALE = 1.0; OTHER = 2\n"),  # two statements on one line share a block
        ("SCALE = 1.0\n", "SCALE = (1.0 +\n"),  # an open bracket: a syntax error until it is closed
        ("def helper(x):\n    return x.sum()\n", ""),  # a whole block removed
        ("import torch\n", "import torch\n\x0c\n"),  # a form feed: not a line break for Python
        ("    def forward(self, x):\n", "    def forward(self, x):\r\n"),  # mixed line endings
    ],
)
def test_edits_at_block_edges(before: str, after: str) -> None:
    assert before in MODEL
    summarizer = FileSummarizer(PATH)
    versions(summarizer, MODEL, MODEL.replace(before, after, 1), MODEL)


def test_a_syntax_error_then_its_fix() -> None:
    summarizer = FileSummarizer(PATH)
    broken = MODEL.replace("return x.sum()", "return x.sum(")
    versions(summarizer, MODEL, broken, broken + "\n", MODEL)
    assert summarizer.summarize(broken).error is not None


LAYERS = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class Attention(nn.Module):
        def __init__(self, use_rope):
            super().__init__()
            self.use_rope = use_rope

        def forward(self, x):
            return x * 2 if self.use_rope else x


    def _layer_use_rope(layer_id, n_layers){returns}:
        return (n_layers - layer_id - 1) % 4 != 0


    layers = nn.ModuleList([Attention(use_rope=_layer_use_rope(i, 8)) for i in range(8)])
    for layer in layers:
        layer.compile()
    """
)


def test_a_return_annotation_in_another_block_is_read_again() -> None:
    """The layer loop's block reads the helper's ``-> bool`` (DL107's per-layer values): editing only the helper
    must not leave the loop's cached result behind."""
    annotated, plain = LAYERS.format(returns=" -> bool"), LAYERS.format(returns="")
    summarizer = FileSummarizer(PATH)
    versions(summarizer, annotated, plain, annotated)
    assert any(c.code == "DL107" for c in summarizer.summarize(annotated).candidates)


def test_emptied_then_refilled() -> None:
    summarizer = FileSummarizer(PATH)
    versions(summarizer, MODEL, "", "\n\n", "VALUES = [1]\n", MODEL, "\ufeff" + MODEL)


@st.composite
def edit_sequences(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A source and what it becomes after each of a few edits: text cut out and tokens typed in at random places,
    lines deleted, duplicated, re-indented or typed into."""
    text = first = draw(st.sampled_from(CORPUS))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    steps = []
    for _ in range(draw(st.integers(1, 8))):
        if rng.random() < 0.6 or "\n" not in text:
            start = rng.randrange(len(text) + 1)
            end = min(len(text), start + rng.choice((0, 0, 1, 5, 40)))
            text = text[:start] + rng.choice((*TOKENS, "", "\n")) + text[end:]
        else:
            lines = text.splitlines(keepends=True)
            edit_a_line(lines, rng)
            text = "".join(lines)
        steps.append(text)
    return first, steps


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(edit_sequences())
def test_any_edits_give_the_from_scratch_summary(sequence: tuple[str, list[str]]) -> None:
    first, steps = sequence
    summarizer = FileSummarizer(PATH)
    versions(summarizer, first, *steps)


def test_a_one_line_edit_walks_its_block_and_at_most_its_neighbours_again() -> None:
    """The equality above is not bought by falling back: typing in the middle of the fixtures walks one block
    again, two or three when the line is at a block's edge (the neighbour may be joined to it)."""
    rng = random.Random(0)
    walked = []
    for text in FIXTURE_TEXTS:
        summarizer = FileSummarizer(PATH)
        summarizer.summarize(text)
        lines = text.splitlines(keepends=True)
        for _ in range(3):
            i = rng.randrange(len(lines))
            lines[i] = lines[i].rstrip("\n") + "  # edited\n"
            versions(summarizer, "".join(lines))
            replayed, blocks = summarizer.reused
            walked.append(blocks - replayed)
    assert max(walked) <= 3
    assert walked.count(1) > 0.7 * len(walked)
