"""The quick fixes of the usage checks remove what they fix: the edited program parses, the finding is gone, and
(slow) torch compiles the edited program fewer times."""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path

import pytest
from oracle import ORACLE_PYTHON

from dynamo_lens.model import Edit, Finding, Fix
from dynamo_lens.static import link, summarize

pytestmark = [pytest.mark.oracle, pytest.mark.usefixtures("describe_oracle_torch")]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "static"
PROBE = Path(__file__).with_name("usage_probe.py")

# fixture, code, fix title, compiles of the busiest frame after the fix
FIXED = (
    ("DL201_lambda_backend.py", "DL201", "Hoist torch.compile out of the loop", 1),
    ("DL201_same_backend_alias.py", "DL201", "Hoist torch.compile out of the loop", 1),
    ("DL203_int_arg_dynamic_false.py", "DL203", "Compile with dynamic=True", 1),
    ("DL203_int_arg_automatic_dynamic_off.py", "DL203", "Compile with dynamic=True", 1),  # overrides the setting
    ("DL203_module_float_info.py", "DL203", "Compile with dynamic=True", 1),
    ("DL207_mark_after_warmup.py", "DL207", "Mark the tensor dynamic before the first call", 1),
    ("DL207_maybe_mark_alias.py", "DL207", "Mark the tensor dynamic before the first call", 1),
    ("DL207_assigned_output.py", "DL207", "Mark the tensor dynamic before the first call", 1),
    ("DL209_steplr_compiled_step.py", "DL209", "Use a tensor learning rate", 1),
)


def apply(text: str, edits: tuple[Edit, ...]) -> str:
    """Apply non-overlapping edits (1-based lines, 1-based character columns, exclusive end)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column - 1 if line <= len(lines) else len(text)

    for edit in sorted(edits, key=lambda e: (e.span.line, e.span.column), reverse=True):
        begin = offset(edit.span.line, edit.span.column)
        end = offset(edit.span.end_line, edit.span.end_column)
        text = text[:begin] + edit.new_text + text[end:]
    return text


def findings(name: str, text: str, code: str) -> list[Finding]:
    return [f for f in link([summarize(name, text)]) if f.code == code]


def fixed_text(name: str, code: str, title: str) -> str:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    found = findings(name, text, code)
    assert len(found) == 1
    fixes: list[Fix] = [fix for fix in found[0].fixes if fix.title == title]
    assert len(fixes) == 1, [fix.title for fix in found[0].fixes]
    return apply(text, fixes[0].edits)


@pytest.mark.parametrize(("name", "code", "title", "compiles"), FIXED, ids=[f[0] for f in FIXED])
def test_fix_removes_the_finding(name: str, code: str, title: str, compiles: int) -> None:
    text = fixed_text(name, code, title)
    ast.parse(text)
    assert findings(name, text, code) == []


def test_hoist_moves_the_statement_above_the_loop() -> None:
    text = fixed_text("DL201_lambda_backend.py", "DL201", "Hoist torch.compile out of the loop")
    lines = text.splitlines()
    loop = next(i for i, line in enumerate(lines) if line.startswith("for "))
    assert lines[loop - 1].startswith("step = torch.compile(train_step, backend=lambda")
    assert lines[loop + 1 :] == ["    step(x)"]


def test_inline_compile_is_hoisted_into_a_name() -> None:
    text = fixed_text("DL201_same_backend_alias.py", "DL201", "Hoist torch.compile out of the loop")
    assert 'compiled_model = tc(model, backend="eager")\nwhile step < len(batches):' in text
    assert "    out = compiled_model(batches[step])" in text


def test_raising_the_limit_leaves_the_bounded_cost() -> None:
    """DL107's fix sets the limit to the number of layer indices: on re-scan the finding states the bounded cost
    (one entry per layer, within the limit) and points at the setting; DL107_layer_index_raised_limit.py is that
    program, measured by the torch oracle (12 compiles, no limit hit)."""
    name = "DL107_twelve_layers.py"
    text = fixed_text(name, "DL107", "Raise recompile_limit to 12, one entry per value")
    assert "torch._dynamo.config.recompile_limit = 12\n" in text
    (rescanned,) = findings(name, text, "DL107")
    assert rescanned.severity.value == "info"
    assert "12 compiles in all), within recompile_limit (12)" in rescanned.message
    assert any(r.message == "`recompile_limit` is set here" for r in rescanned.related)
    assert not rescanned.fixes


HOOKED = (
    "DL401_submodule_hook_after_call.py",
    "DL401_hook_loop_modules.py",
    "DL401_module_in_compiled_fn.py",
    "DL401_backward_hook_in_loop.py",
    "DL401_top_level_torch_nn.py",
    "DL401_hook_comprehension.py",
    "DL401_hook_added_by_helper.py",
)
GUARD_HOOKS = "Guard module hooks (skip_nnmodule_hook_guards = False)"


@pytest.mark.parametrize("name", HOOKED)
def test_guarding_hooks_leaves_the_bounded_cost(name: str) -> None:
    """DL401's fix turns the hook guards on: on re-scan the finding is an info that names the setting (one recompile,
    the hooks run)."""
    text = fixed_text(name, "DL401", GUARD_HOOKS)
    assert "torch._dynamo.config.skip_nnmodule_hook_guards = False\n" in text
    (rescanned,) = findings(name, text, "DL401")
    assert rescanned.severity.value == "info"
    assert "the next call recompiles (one more entry) and runs the hooks" in rescanned.message
    assert any(r.message == "`skip_nnmodule_hook_guards` is set here" for r in rescanned.related)
    assert not rescanned.fixes


@pytest.mark.slow
def test_torch_runs_the_hooks_once_they_are_guarded(tmp_path: Path) -> None:
    """What the re-scan says, measured: each fixed program compiles twice and its hooks fire as often as in eager."""
    scripts = []
    for name in HOOKED:
        script = tmp_path / name
        script.write_text(fixed_text(name, "DL401", GUARD_HOOKS), encoding="utf-8")
        scripts.append(script)
    done = subprocess.run(
        [ORACLE_PYTHON, str(PROBE), *map(str, scripts)], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    results = json.loads(done.stdout)
    for name, script in zip(HOOKED, scripts, strict=True):
        seen = results[str(script)]
        assert seen["error"] is None, (name, seen["error"])
        assert max(seen["compiles"].values()) == 2, (name, seen["compiles"])
        assert not seen["limit_hits"], name
        assert seen["hits"] == seen["eager_hits"] > 0, (name, seen["hits"], seen["eager_hits"])


@pytest.mark.slow
def test_torch_compiles_the_fixed_programs_less(tmp_path: Path) -> None:
    scripts = []
    for name, code, title, _ in FIXED:
        script = tmp_path / name
        script.write_text(fixed_text(name, code, title), encoding="utf-8")
        scripts.append(script)
    done = subprocess.run(
        [ORACLE_PYTHON, str(PROBE), *map(str, scripts)], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    results = json.loads(done.stdout)
    for (name, _, _, compiles), script in zip(FIXED, scripts, strict=True):
        seen = results[str(script)]
        assert seen["error"] is None, (name, seen["error"])
        assert max(seen["compiles"].values()) == compiles, (name, seen["compiles"])
        assert not seen["limit_hits"], name
