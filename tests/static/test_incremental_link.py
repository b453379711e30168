"""The editor's incremental linking (``static.Linker``): after any sequence of edits to any files of a workspace,
linking with the linker gives exactly what linking from scratch gives, while an edit to one file leaves the results
of the files that cannot see it alone."""

from __future__ import annotations

import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sources import FIXTURES, TOKENS

from dynamo_lens.static import Linker, link, summarize

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WORKSPACE = {str(p): p.read_text(encoding="utf-8") for p in [*sorted(FIXTURES.rglob("*.py")), *EXAMPLES.rglob("*.py")]}
PIECES = (
    *TOKENS,
    "class Extra(nn.Module):\n    def forward(self, x):\n        self.k += 1\n        return x\n",
    "\nmodel = torch.compile(Model())\n",
    "from .blocks import Block\n",
    "        self.count = self.count + 1\n",
)


@st.composite
def edits(draw: st.DrawFn) -> list[tuple[str, int, int, str]]:
    """A few edits, each to any file of the workspace: (path, start, end, text typed over that range)."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    paths = sorted(WORKSPACE)
    found = []
    for _ in range(draw(st.integers(1, 12))):
        path = rng.choice(paths)
        start = rng.randrange(len(WORKSPACE[path]) + 1)
        found.append((path, start, start + rng.choice((0, 0, 1, 8, 60)), rng.choice(PIECES)))
    return found


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits())
def test_linking_after_any_edits_gives_the_from_scratch_findings(changes: list[tuple[str, int, int, str]]) -> None:
    texts = dict(WORKSPACE)
    summaries = {path: summarize(path, text) for path, text in texts.items()}
    linker = Linker()
    assert link(list(summaries.values()), linker) == link(list(summaries.values()))
    for path, start, end, typed in changes:
        texts[path] = texts[path][:start] + typed + texts[path][end:]
        summaries[path] = summarize(path, texts[path])
        assert link(list(summaries.values()), linker) == link(list(summaries.values()))


def test_an_edit_affects_the_files_that_can_see_it_only() -> None:
    """Editing the example model affects it and the scripts that import a module named ``model`` (any of the
    fixtures' ``train.py``: which ``model.py`` such an import means depends on the other files), not the rest."""
    summaries = {path: summarize(path, text) for path, text in WORKSPACE.items()}
    linker = Linker()
    link(list(summaries.values()), linker)
    model = str(EXAMPLES / "training_project" / "model.py")
    summaries[model] = summarize(model, WORKSPACE[model].replace("self.step += 1", "self.step += 2"))
    link(list(summaries.values()), linker)
    assert linker.last is not None and linker.last.affected is not None
    affected = linker.last.affected
    assert {model, str(EXAMPLES / "training_project" / "train.py")} <= affected
    assert all(path == model or path.endswith("train.py") for path in affected), sorted(affected)
    assert len(affected) < len(WORKSPACE) / 10
