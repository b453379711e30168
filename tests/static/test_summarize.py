"""The framework under the checks: positions, names, compile-site targets, cross-file resolution, bad input."""

from __future__ import annotations

import ast
import gc
import pickle

from sources import FIXTURE_TEXTS

from dynamo_lens.static import link, might_matter, summarize
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.incremental import FileSummarizer
from dynamo_lens.static.positions import LineIndex
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.summary import LOCAL, Ref
from dynamo_lens.static.walk import Walker

MODEL = """\
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = 0

    def forward(self, x):
        self.steps += 1
        return x
"""


def context(text: str) -> FileContext:
    ctx = FileContext("m.py", text, ast.parse(text), LineIndex("m.py", text))
    walker = Walker(ctx)
    walker.run()
    walker.finish()
    return ctx


def test_columns_count_characters_not_bytes() -> None:
    text = 'import torch\n\n\n@torch.compile\ndef f(x):\n    s = "ééé"; y = torch.compile(x)\n    return y\n'
    sites = summarize("m.py", text).compile_sites
    call = next(s for s in sites if s.form == "call")
    assert (call.span.line, call.span.column, call.span.end_column) == (6, 20, 36)
    assert text.splitlines()[5][call.span.column - 1 : call.span.end_column - 1] == "torch.compile(x)"


def test_aliases_resolve_to_canonical_names() -> None:
    ctx = context(
        "import torch as T\nfrom torch import compile as tc, nn\nimport functools\n"
        "compiler = T.compile\ncp = functools.partial(tc, mode='max-autotune')\n"
    )
    names = {n: ctx.resolve(ast.parse(n, mode="eval").body) for n in ("T.compile", "tc", "compiler", "nn.Module")}
    assert names == {
        "T.compile": "torch.compile",
        "tc": "torch.compile",
        "compiler": "torch.compile",
        "nn.Module": "torch.nn.Module",
    }
    assert ctx.compile_partials == {"cp"}
    assert ctx.resolve(ast.parse("unknown.compile", mode="eval").body) is None


def test_refs_distinguish_local_relative_and_absolute_names() -> None:
    ctx = context("from .model import Model\nfrom ..pkg import base\nclass Local: pass\n")
    parse = lambda s: ast.parse(s, mode="eval").body  # noqa: E731
    assert ctx.ref(parse("Model")) == Ref("model.Model", 1)
    assert ctx.ref(parse("base.Base")) == Ref("pkg.base.Base", 2)
    assert ctx.ref(parse("Local")) == Ref("Local", LOCAL)


def test_cross_file_compile_site_with_absolute_paths() -> None:
    train = "import torch\nfrom model import Model\n\nm = Model()\ncm = torch.compile(m)\n"
    summaries = [summarize("/tmp/x/model.py", MODEL), summarize("/tmp/x/train.py", train)]
    findings = link(summaries)
    dl101 = [f for f in findings if f.code == "DL101"]
    assert [(f.path, f.span.line, f.severity.value) for f in dl101] == [("/tmp/x/model.py", 11, "warning")]
    assert [(r.span.path, r.span.line, r.message) for r in dl101[0].related][-1] == (
        "/tmp/x/train.py",
        5,
        "compiled here → `Model.forward`",
    )
    index = WorkspaceIndex(summaries)
    site = index.compiled_binding("/tmp/x/train.py", "", "cm")
    assert site is not None and site.span.line == 5
    assert index.compiled_binding("/tmp/x/train.py", "", "m") == site  # the instance shares the module's state
    assert index.sites_for_scope("/tmp/x/model.py", "Model.forward") == (site,)
    assert index.is_module_class(("/tmp/x/model.py", "Model"))


def test_relative_import_through_a_package_reexport() -> None:
    summaries = [
        summarize("proj/pkg/__init__.py", "from .model import Model\n"),
        summarize("proj/pkg/model.py", MODEL),
        summarize("proj/run.py", "import torch\nfrom pkg import Model\n\ntorch.compile(Model())\n"),
    ]
    dl101 = [f for f in link(summaries) if f.code == "DL101"]
    assert [(f.path, f.severity.value) for f in dl101] == [("proj/pkg/model.py", "warning")]


def test_uncompiled_module_hazard_is_a_hint() -> None:
    assert [(f.code, f.severity.value) for f in link([summarize("m.py", MODEL)])] == [("DL101", "hint")]


def test_syntax_error_keeps_what_precedes_it() -> None:
    text = MODEL + "\n\ndef broken(:\n    pass\n"
    summary = summarize("m.py", text)
    assert summary.error is not None and "line 15" in summary.error
    assert [c.qualname for c in summary.classes] == ["Model"]


def test_byte_order_mark_and_crlf_keep_positions() -> None:
    summary = summarize("m.py", "\ufeff" + MODEL.replace("\n", "\r\n"))
    assert summary.error is None
    assert [(f.span.line, f.span.column) for f in link([summary]) if f.code == "DL101"] == [(11, 9)]


def test_bad_input_never_raises() -> None:
    for text in ("\x00", "(" * 5000, "x = " + "+".join(["a"] * 50000), "class", "def f(:", "\udcff"):
        summary = summarize("bad.py", text)
        pickle.loads(pickle.dumps(summary))
        link([summary])


def test_prefilter_skips_files_that_cannot_matter() -> None:
    assert not might_matter("VALUES = [1, 2, 3]\nNAMES = ('a', 'b')\n")
    assert summarize("data.py", "VALUES = [1, 2, 3]\n").skipped
    assert might_matter("from .model import Model\n")  # a re-export: other files resolve names through it


def test_summaries_pickle_round_trip() -> None:
    summary = summarize("m.py", MODEL)
    assert pickle.loads(pickle.dumps(summary)) == summary


def test_form_feeds_do_not_move_lines() -> None:
    """Python does not break lines at a form feed; a check that looked up a statement's line after one did."""
    text = (
        "import torch\n\x0c\n# section\x0c two\n\n"
        "@torch.compile\ndef f(x):\n    y = x.sum()\n    return y if y > 0 else 0\n"
    )
    assert [(f.code, f.span.line) for f in link([summarize("m.py", text)])] == [("DL001", 5), ("DL302", 8)]


def test_summaries_leave_no_reference_cycles() -> None:
    """Files are analysed with the cyclic collector paused: whatever a summary left in a cycle would pile up (a
    cold scan of 4,300 files once peaked at 1.7 GB that way)."""
    link([summarize("/ws/m.py", text) for text in FIXTURE_TEXTS])  # every check module imported (slots classes
    gc.collect()  # leave their first definitions behind in cycles, once)
    collecting = gc.isenabled()
    gc.disable()
    try:
        for text in FIXTURE_TEXTS:
            summarize("/ws/m.py", text)
            summarizer = FileSummarizer("/ws/m.py")
            summarizer.summarize(text)
            summarizer.summarize(text + "\n# edited\n")
        assert gc.collect() == 0
    finally:
        if collecting:
            gc.enable()


def test_dynamo_settings_are_recorded_in_every_form() -> None:
    text = """
import torch
import torch._dynamo.config as dynamo_config
from torch._dynamo import config

torch._dynamo.config.capture_scalar_outputs = True
dynamo_config.cache_size_limit = 64

def setup(flag):
    config.recompile_limit = flag
    if flag:
        torch._dynamo.config.capture_dynamic_output_shape_ops = True
    with torch._dynamo.config.patch(specialize_float=False):
        pass

@torch._dynamo.config.patch("capture_scalar_outputs", True)
def step(x):
    return x

class Runner:
    @config.patch({"automatic_dynamic_shapes": False})
    def run(self):
        pass
"""
    summary = summarize("/w/settings.py", text)
    recorded = [
        (s.name, s.value, s.span.line, s.function, s.decorates, s.conditional, s.body) for s in summary.settings
    ]
    assert recorded == [
        ("capture_scalar_outputs", "True", 6, "", "", False, (0, 0)),
        ("recompile_limit", "64", 7, "", "", False, (0, 0)),  # the old name is recorded as the current one
        ("recompile_limit", "", 10, "setup", "", False, (0, 0)),  # not a literal: its value is unknown
        ("capture_dynamic_output_shape_ops", "True", 12, "setup", "", True, (0, 0)),
        ("specialize_float", "False", 13, "setup", "", False, (14, 14)),  # `with patch(...)`: its body only
        ("capture_scalar_outputs", "True", 16, "", "step", False, (0, 0)),
        ("automatic_dynamic_shapes", "False", 21, "", "Runner.run", False, (0, 0)),
    ]


def test_a_stance_is_conditional_under_any_test_but_the_main_guard() -> None:
    text = """
import torch

def warm(strict):
    if strict:
        torch.compiler.set_stance("fail_on_recompile")
    try:
        pass
    except RuntimeError:
        torch.compiler.set_stance("eager_on_recompile")
    with torch.compiler.set_stance("force_eager"):
        pass

if __name__ == "__main__":
    torch.compiler.set_stance("fail_on_recompile")
"""
    summary = summarize("/w/stance.py", text)
    recorded = [(s.name, s.value, s.span.line, s.conditional) for s in summary.settings]
    assert recorded == [
        ("stance", "'fail_on_recompile'", 6, True),  # `if strict:`
        ("stance", "'eager_on_recompile'", 10, True),  # an `except` handler, whatever other `if`s the scope has
        ("stance", "'force_eager'", 11, True),  # `with set_stance(...)`: its body only
        ("stance", "'fail_on_recompile'", 15, False),  # a script always takes `if __name__ == "__main__":`
    ]


def test_a_setting_in_a_try_body_runs_and_one_in_a_handler_loop_or_if_may_not() -> None:
    text = """
import torch

try:
    torch._dynamo.config.cache_size_limit = 1_000_000
except AttributeError:
    torch._dynamo.config.recompile_limit = 64
for _ in range(2):
    torch._dynamo.config.specialize_int = True
if torch.cuda.is_available():
    torch._dynamo.config.capture_scalar_outputs = True
"""
    summary = summarize("/w/tried.py", text)
    recorded = [(s.name, s.value, s.span.line, s.conditional) for s in summary.settings]
    assert recorded == [
        ("recompile_limit", "1000000", 5, False),  # a `try` body runs (timm's optim/kron.py raises the limit so)
        ("recompile_limit", "64", 7, True),
        ("specialize_int", "True", 9, True),  # a loop body may run zero times
        ("capture_scalar_outputs", "True", 11, True),
    ]


def test_the_call_path_a_finding_shows_does_not_depend_on_the_order_of_a_value_set() -> None:
    # The evaluator hands the reach sets of values, whose order changes with the interpreter's string hashing; the
    # walk keeps the first way it reaches a node, which is the path a finding shows.
    from dynamo_lens.static.semantic.evaluate import FunctionValue, Instance, MethodValue

    index = WorkspaceIndex([summarize("/tmp/x/m.py", "import torch\n")])
    values = [
        Instance(("/tmp/x/m.py", "Gamma")),
        MethodValue(("/tmp/x/m.py", "Alpha"), "forward"),
        FunctionValue(("/tmp/x/m.py", "step")),
        Instance(("/tmp/x/m.py", "Beta")),
    ]
    orderings = (values, values[::-1], values[1:] + values[:1])
    assert len({tuple(index.reach._entry_states(ordering)) for ordering in orderings}) == 1
