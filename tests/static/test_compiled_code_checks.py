"""What DL204/DL205/DL301/DL302 say beyond the line: severity by reachability and cost, the related locations,
the names and registry ids in messages, and the places they must stay silent. (Lines against real torch runs:
test_torch_agreement.py; fixtures: test_fixtures.py.)"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from dynamo_lens import torch_facts
from dynamo_lens.model import Finding, Severity
from dynamo_lens.static import link, summarize


def analyse(*files: tuple[str, str]) -> list[Finding]:
    return link([summarize(path, textwrap.dedent(text)) for path, text in files])


def only(findings: list[Finding], code: str) -> list[Finding]:
    return [f for f in findings if f.code == code]


def test_uncompiled_module_forward_is_a_hint_and_a_plain_function_is_silent() -> None:
    findings = analyse(
        (
            "/ws/net.py",
            """
            import torch
            from torch import nn

            def report(t):
                print("mean", t.mean().item())

            class Net(nn.Module):
                def forward(self, x):
                    print(x.shape)
                    return self.scale(x)

                def scale(self, x):
                    return x * x.sum().item()
            """,
        )
    )
    assert [(f.span.line, f.severity) for f in only(findings, "DL301")] == [(10, Severity.HINT), (14, Severity.HINT)]


def test_compiled_in_another_file_is_a_warning_with_the_site_as_related() -> None:
    findings = analyse(
        (
            "/ws/model.py",
            """
            from torch import nn

            class Net(nn.Module):
                def forward(self, x):
                    print(x.shape)
                    return x
            """,
        ),
        (
            "/ws/train.py",
            """
            import torch
            from model import Net

            model = torch.compile(Net())
            """,
        ),
    )
    [found] = only(findings, "DL301")
    assert (found.span.path, found.span.line, found.severity) == ("/ws/model.py", 6, Severity.WARNING)
    assert [(r.span.path, r.span.line, r.message) for r in found.related] == [
        ("/ws/train.py", 5, "compiled here → `Net.forward`")
    ]
    assert "GB0059" in found.message and found.data["gb_id"] == "GB0059"


def test_disabled_helper_is_not_traced_its_call_breaks() -> None:
    findings = analyse(
        (
            "/ws/a.py",
            """
            import torch

            @torch.compiler.disable
            def log_stats(t):
                print("mean", t.mean().item())

            @torch.compile
            def f(x):
                log_stats(x)
                return x + 1
            """,
        )
    )
    [found] = only(findings, "DL301")  # nothing inside `log_stats`: Dynamo runs all of it in Python
    assert (found.span.line, found.severity, found.data["gb_id"]) == (10, Severity.INFO, "GB0098")


def test_item_message_names_the_call_and_the_config_switch() -> None:
    findings = analyse(
        (
            "/ws/a.py",
            """
            import torch as T

            @T.compile
            def f(x):
                return x / x.sum().item()
            """,
        )
    )
    [found] = only(findings, "DL301")
    assert "`x.sum().item()`" in found.message
    assert "GB0124" in found.message and "capture_scalar_outputs = True" in found.message
    assert (found.span.column, found.span.end_column) == (16, 30)


@pytest.mark.parametrize(
    ("initial", "value", "severity"),
    [
        ("0", "step", Severity.WARNING),
        ("'start'", "f'mode{step}'", Severity.WARNING),
        ("[]", "[0] * step", Severity.WARNING),
        ("0", "step / 10", Severity.INFO),
        ("False", "step % 2 == 0", Severity.INFO),
    ],
)
def test_global_severity_follows_the_value_kind(initial: str, value: str, severity: Severity) -> None:
    findings = analyse(
        (
            "/ws/a.py",
            f"""
            import torch

            SETTING = {initial}

            @torch.compile
            def f(x):
                return x, SETTING

            for step in range(10):
                SETTING = {value}
                f(1)
            """,
        )
    )
    [found] = only(findings, "DL204")
    assert (found.span.line, found.severity) == (8, severity)
    assert "`SETTING`" in found.message and "torch 2.13" in found.message
    assert [r.span.line for r in found.related] == [11, 6]
    assert [r.message for r in found.related] == ["`SETTING` assigned here", "compiled here → `f`"]


def test_global_of_unknown_kind_or_tensor_is_silent() -> None:
    findings = analyse(
        (
            "/ws/a.py",
            """
            import torch

            CACHE = make_cache()
            WEIGHT = torch.ones(3)

            @torch.compile
            def f(x):
                return x * WEIGHT + CACHE

            for step in range(10):
                CACHE = make_cache()
                WEIGHT = torch.ones(3) * step
                f(x)
            """,
        )
    )
    assert only(findings, "DL204") == []


def test_global_shadowed_by_parameter_or_enclosing_local_is_not_the_global() -> None:
    findings = analyse(
        (
            "/ws/a.py",
            """
            import torch

            N = 0

            @torch.compile
            def f(x, N):
                return x * N

            def outer():
                N = 3

                @torch.compile
                def g(x):
                    return x * N
                return g

            for step in range(10):
                N = step
            """,
        )
    )
    assert only(findings, "DL204") == []


def test_closure_rebound_before_the_definition_only_is_silent() -> None:
    findings = analyse(
        (
            "/ws/a.py",
            """
            import torch

            def run(x):
                total = 0
                for v in range(3):
                    total += v

                @torch.compile
                def f(x):
                    return x * total

                for _ in range(10):
                    f(x)
            """,
        )
    )
    assert only(findings, "DL205") == []


def test_closure_rebound_in_the_loop_that_defines_the_compiled_function() -> None:
    """A fresh closure compiled on every iteration: torch 2.13 recompiles once (`k == 2`), then goes dynamic."""
    findings = analyse(
        (
            "/ws/a.py",
            """
            import torch

            def run(x):
                for i in range(10):
                    k = i + 2

                    @torch.compile
                    def f(x):
                        return x * k

                    f(x)
            """,
        )
    )
    [found] = only(findings, "DL205")
    assert (found.span.line, found.severity) == (10, Severity.INFO)
    assert [r.span.line for r in found.related][:1] == [6]


@pytest.mark.parametrize(
    "condition",
    ["x.shape[0] > 2", "x.dim() == 2", "flag", "x is None", "n > 3", "x.requires_grad", "len(x) > 1"],
)
def test_conditions_known_while_tracing_are_not_data_dependent(condition: str) -> None:
    findings = analyse(
        (
            "/ws/a.py",
            f"""
            import torch

            @torch.compile
            def f(x, n: int, flag: bool):
                if {condition}:
                    x = x + 1
                return x
            """,
        )
    )
    assert only(findings, "DL302") == []


@pytest.mark.parametrize(
    "condition",
    ["y.sum() > 0", "not y.any()", "y.max() > 1 or n > 3", "torch.isnan(y).any()", "y[0] > 0", "-y.mean() < 0"],
)
def test_tensor_conditions_are_data_dependent(condition: str) -> None:
    findings = analyse(
        (
            "/ws/a.py",
            f"""
            import torch

            @torch.compile
            def f(x, n: int):
                y = torch.relu(x)
                if {condition}:
                    y = y + 1
                return y
            """,
        )
    )
    [found] = only(findings, "DL302")
    assert found.span.line == 7 and "GB0170" in found.message


def test_int_of_a_python_number_is_not_a_graph_break() -> None:
    findings = analyse(
        (
            "/ws/a.py",
            """
            import torch

            @torch.compile
            def f(x, n, scale: float):
                rows = int(x.shape[0])
                return x * float(scale) * int(n) * rows, float(x.sum())
            """,
        )
    )
    assert [(f.span.line, f.span.column) for f in only(findings, "DL301")] == [(7, 46)]


def test_self_updates_of_an_argument_do_not_make_it_a_tensor() -> None:
    """`width = width // self.patch_size` on a plain argument (diffusers' embeddings.py): no graph break."""
    findings = analyse(
        (
            "/ws/a.py",
            """
            import torch

            @torch.compile
            def crop(x, width, extra=None):
                width = width // 2
                if width > 4:
                    x = x[:, :width]
                if extra:
                    extra = extra * 2
                y = torch.relu(x)
                y = y + 1
                if y.sum() > 0:
                    y = y * 2
                return x, y
            """,
        )
    )
    assert [f.span.line for f in only(findings, "DL302")] == [13]


def test_comprehension_and_lambda_variables_are_not_the_global() -> None:
    findings = analyse(
        (
            "/ws/a.py",
            """
            import torch

            K = 0

            @torch.compile
            def f(x):
                total = sum(K * 2 for K in range(3))
                scale = (lambda K: K + 1)(2)
                return x * total * scale

            for step in range(10):
                K = step
                f(1)
            """,
        )
    )
    assert only(findings, "DL204") == []


ITEM_IN_FORWARD = (
    "/ws/net.py",
    """
    import torch
    from torch import nn

    class Net(nn.Module):
        def forward(self, x):
            return x * x.sum().item()

    model = torch.compile(Net())
    """,
)


@pytest.fixture
def users_torch(tmp_path):
    """A torch whose registry numbers `.item()`'s break GB9999 (ids are renumbered between releases)."""
    registry = tmp_path / "torch" / "_dynamo" / "graph_break_registry.json"
    registry.parent.mkdir(parents=True)
    registry.write_text(
        '{"GB9999": [{"Gb_type": "Unsupported Tensor.item() call with capture_scalar_outputs=False"}]}',
        encoding="utf-8",
    )
    with torch_facts.targeting(torch_facts.TorchTarget(torch_facts.Release(2, 14), str(tmp_path / "torch"))):
        yield


@pytest.mark.usefixtures("users_torch")
def test_graph_break_id_and_release_are_the_users_torchs() -> None:
    [found] = only(analyse(ITEM_IN_FORWARD), "DL301")
    assert '(torch 2.14: GB9999 "Unsupported Tensor.item() call' in found.message and found.data["gb_id"] == "GB9999"


def test_no_readable_registry_means_no_graph_break_id() -> None:
    with torch_facts.targeting(torch_facts.TorchTarget(torch_facts.Release(2, 14), torch_dir=None)):
        [found] = only(analyse(ITEM_IN_FORWARD), "DL301")
    assert "no registry of that torch is readable here to give its graph-break id" in found.message
    assert "GB0124" not in found.message and found.data["gb_id"] == ""


def test_no_torch_found_names_the_releases_the_claim_holds_for() -> None:
    with torch_facts.targeting(torch_facts.TorchTarget(None)):
        [found] = only(analyse(ITEM_IN_FORWARD), "DL301")
    low = torch_facts.claims_hold_since("DL301")
    held = f"torch {low} to 2.13" if low < torch_facts.PINNED else "torch 2.13"
    assert f"({held}: " in found.message


@pytest.mark.parametrize(
    ("release", "named"),
    [
        (torch_facts.Release(2, 14), "torch 2.14"),
        (torch_facts.Release(2, 15), "torch 2.15, as measured on 2.14"),
        (torch_facts.Release(2, 3), "unlike your 2.3"),
    ],
)
def test_the_release_is_named_where_the_claims_were_measured(release: torch_facts.Release, named: str) -> None:
    with torch_facts.targeting(torch_facts.TorchTarget(release)):
        [found] = only(analyse(ITEM_IN_FORWARD), "DL301")
    assert named in found.message


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "static"


@pytest.mark.parametrize(
    ("fixture", "release", "severity", "says"),
    [
        # an int counter on a module the frame gets as an input: dynamic after one recompile before 2.8
        ("DL101_run_counter.py", (2, 6), Severity.INFO, "recompiles once and then treats the int as dynamic"),
        ("DL101_run_module_argument.py", (2, 5), Severity.INFO, "recompiles once and then treats the int as dynamic"),
        ("DL101_run_counter.py", (2, 8), Severity.WARNING, "after recompile_limit (8) the frame runs eagerly"),
        # reached through a module container or a global: static there too, under the limit's old name before 2.7
        ("DL101_run_blocks_from_constructor.py", (2, 6), Severity.WARNING, "after cache_size_limit (8)"),
        ("DL101_run_module_global.py", (2, 7), Severity.WARNING, "after recompile_limit (8)"),
        # floats: static on 2.5 whatever the site says, dynamic after one recompile whatever it says on 2.6 and 2.7
        ("DL101_run_float_decay.py", (2, 5), Severity.WARNING, "`specialize_float` (on by default before torch 2.6)"),
        ("DL101_run_float_dynamic_false.py", (2, 7), Severity.INFO, "recompiles once and then treats the float"),
        ("DL101_run_float_dynamic_false.py", (2, 13), Severity.WARNING, "under `dynamic=False`, never makes"),
        # a loop bound stays specialised on every release
        ("DL101_run_counter_loop_bound.py", (2, 6), Severity.WARNING, "after cache_size_limit (8)"),
        # a counter created in forward: absent, its first value, then dynamic before 2.8
        ("DL103_run_getattr_counter.py", (2, 7), Severity.INFO, "3 compiles in all"),
        ("DL103_run_getattr_counter.py", (2, 8), Severity.WARNING, "every call recompiles"),
    ],
)
def test_module_state_codes_state_what_the_users_release_does(
    fixture: str, release: tuple[int, int], severity: Severity, says: str
) -> None:
    """What each release does is measured by the oracle on that release (``make oracle TORCH=2.6.0``); here, that
    the message and severity follow the release the user runs."""
    path = FIXTURES / fixture
    with torch_facts.targeting(torch_facts.TorchTarget(torch_facts.Release(*release))):
        [found] = only(analyse((str(path), path.read_text(encoding="utf-8"))), fixture[:5])
    assert found.severity is severity
    assert says in found.message, found.message


@pytest.mark.parametrize(
    ("setting", "reported"),
    [
        ('os.environ["TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS"] = "1"', False),
        ('os.environ.setdefault("TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS", "1")', False),
        ('os.environ["TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS"] = "0"', True),
        ('os.environ["TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS"] = flag', True),
    ],
)
def test_capture_flag_from_the_environment(setting: str, reported: bool) -> None:
    findings = analyse(
        (
            "/ws/a.py",
            f"""
            import os
            import torch

            {setting}

            @torch.compile
            def f(x):
                return x.sum().item()
            """,
        )
    )
    assert [f.span.line for f in only(findings, "DL301")] == ([9] if reported else [])


def test_environment_set_after_a_compile_changes_nothing() -> None:
    """Dynamo reads the variable when the first compile imports it (measured by the probe: a later `os.environ`
    write leaves `capture_scalar_outputs` False), so a break below the write is still reported."""
    findings = analyse(
        (
            "/ws/a.py",
            """
            import os
            import torch

            warm = torch.compile(torch.nn.Linear(2, 2))
            os.environ["TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS"] = "1"

            @torch.compile
            def f(x):
                return x.sum().item()
            """,
        )
    )
    [found] = only(findings, "DL301")
    assert (found.span.line, found.severity) == (10, Severity.WARNING)


@pytest.mark.parametrize(
    ("setting", "options", "stated"),
    [
        ("", "", "after recompile_limit (8) the frame runs eagerly"),
        ("torch._dynamo.config.recompile_limit = 32", "", "after recompile_limit (32) the frame runs eagerly"),
        # torch's cap on all of a frame's entries stops it first (DL101_run_counter_accumulated_limit*.py measure it)
        ("torch._dynamo.config.cache_size_limit = 1e6", "", "after accumulated_recompile_limit (256) the frame runs"),
        (
            "torch._dynamo.config.cache_size_limit = 1e6; torch._dynamo.config.accumulated_cache_size_limit = 2e6",
            "",
            "after recompile_limit (1000000) the frame runs eagerly",
        ),
        ("torch._dynamo.config.recompile_limit = LIMIT", "", "after recompile_limit the frame runs eagerly"),
        ("", ", recompile_limit=4", "after recompile_limit (4) the frame runs eagerly"),
        ("", ", fullgraph=True", "after recompile_limit (8) the next compile raises `FailOnRecompileLimitHit`"),
    ],
)
def test_the_limit_a_message_states_is_the_one_in_force(setting: str, options: str, stated: str) -> None:
    """Where the cost ends at the recompile limit, the message states the project's limit (a value it cannot read
    is not claimed to be 8) and what the compile past it does, with where that is decided."""
    findings = analyse(
        (
            "/ws/a.py",
            f"""
            import torch
            LIMIT = int("16")
            {setting}
            STEP = 0

            @torch.compile(backend="eager"{options})
            def f(x):
                global STEP
                STEP += 1
                return x * STEP
            """,
        )
    )
    (found,) = only(findings, "DL204")
    assert found.span.line == 10
    assert stated in found.message
    decided = {r.span.line for r in found.related if "set here" in r.message or "compiled with" in r.message}
    assert decided == ({4} if setting else {7} if options else set())
