"""Which Dynamo settings the workspace changes, and which of them decide a compile site's behaviour.

A file records every ``torch._dynamo.config.<name> = <value>`` and ``torch._dynamo.config.patch(<name>=<value>)``
(as a call, decorator or ``with``) it makes, the ``torch.compiler.set_stance(...)`` calls (recorded as the setting
``stance``), and the ``os.environ`` variables Dynamo reads settings from (:func:`settings_in`). A check asks
:func:`decide` whether a setting is in force for the code a compile site compiles:

* *certain*: every program that runs the site runs the setting first: it is made at module level of the site's own
  file above the site, in the site's own function above it, around the site's function (a ``patch`` decorator) or
  around the site itself (a ``with patch(...):`` whose body compiles it), or at module level of a file the site's file
  imports (imports run before any call);
* *possible*: some file that can run in one program with the site's file makes it (a recipe that sets it before it
  calls a shared compile helper); other programs that run the site may not.

A setting whose value the scan cannot read (``= args.flag``) is *possible* at most.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from dynamo_lens.model import Edit, Related, Span
from dynamo_lens.static.context import FileContext, NodeAt
from dynamo_lens.static.semantic.contexts import FORCE_EAGER, SET_STANCE
from dynamo_lens.static.summary import CompileSite, DynamoSetting
from dynamo_lens.torch_facts import (
    ACCUMULATED_RECOMPILE_LIMIT,
    COMPILE_LIMIT_KEYWORD_SINCE,
    FLOAT_DYNAMIC_SINCE,
    FLOAT_POLICY_SINCE,
    GLOBALS,
    GRAD_MODE,
    GRAD_MODE_FILTERED_SINCE,
    GUARD_FILTER_SINCE,
    GUARD_FILTERS,
    INT_MODULE_ATTR_DYNAMIC_SINCE,
    INT_MODULE_ATTR_STATIC_SINCE,
    RECOMPILE_LIMIT,
    describes_since,
    limit_setting,
)

if TYPE_CHECKING:
    from dynamo_lens.static.semantic.index import WorkspaceIndex
    from dynamo_lens.static.semantic.reach import Node

CONFIG = "torch._dynamo.config"
PATCH = f"{CONFIG}.patch"
STANCE = "stance"
"""The name a ``torch.compiler.set_stance(...)`` call is recorded under: what a compiled frame does when a guard
fails."""
STANCE_PAST_GUARD = {
    "fail_on_recompile": "the first recompile raises `RuntimeError` instead",
    "eager_on_recompile": "each call that would recompile runs eagerly instead",
}
"""Measured on 2.13 (a module counter, one warm-up call, then the stance, 12 calls): ``fail_on_recompile`` raised
``RuntimeError: Detected recompile when torch.compile stance is 'fail_on_recompile'`` on the second call,
``eager_on_recompile`` kept the one compiled entry and ran every other call eagerly (1 compile)."""
ALIASES = {"cache_size_limit": "recompile_limit", "accumulated_cache_size_limit": "accumulated_recompile_limit"}
"""Old names torch keeps as aliases of the current ones."""
ENVIRONMENT = {
    "TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS": "capture_scalar_outputs",
    "TORCHDYNAMO_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS": "capture_dynamic_output_shape_ops",
    "TORCH_DYNAMO_AUTOMATIC_DYNAMIC_SHAPES": "automatic_dynamic_shapes",
}
"""Environment variables ``torch/_dynamo/config.py`` (2.13) reads as the default of a setting: ``"1"`` is True."""
ENVIRON = "os.environ"


def settings_in(ctx: FileContext, assigns: Iterable[NodeAt], calls: Iterable[NodeAt]) -> Iterator[DynamoSetting]:
    """The Dynamo settings the recorded ``assigns`` and ``calls`` of one block of ``ctx`` make."""
    for at in assigns:
        node = at.node
        assert isinstance(node, ast.Assign)
        for target in node.targets:
            if isinstance(target, ast.Attribute) and ctx.resolve(target.value) == CONFIG and not at.eager_only:
                yield _setting(ctx, target.attr, node.value, target, at)
            elif isinstance(target, ast.Subscript) and ctx.resolve(target.value) == ENVIRON:
                yield from _environment(ctx, target.slice, node.value, target, at)
    for at in calls:
        call = at.node
        assert isinstance(call, ast.Call)
        dotted = ctx.resolve(call.func)
        if dotted == f"{ENVIRON}.setdefault" and len(call.args) == 2:
            yield from _environment(ctx, call.args[0], call.args[1], call, at)
        if dotted == SET_STANCE and not at.eager_only:
            yield from _stance(ctx, call, at)
        if at.eager_only or dotted != PATCH:
            continue
        pairs: list[tuple[str, ast.expr]] = [(k.arg, k.value) for k in call.keywords if k.arg is not None]
        if len(call.args) == 2 and isinstance(first := call.args[0], ast.Constant) and isinstance(first.value, str):
            pairs.append((first.value, call.args[1]))
        elif len(call.args) == 1 and isinstance(table := call.args[0], ast.Dict):
            pairs.extend(
                (key.value, value)
                for key, value in zip(table.keys, table.values, strict=True)
                if isinstance(key, ast.Constant) and isinstance(key.value, str)
            )
        decorates = _decorated(at, call)
        body = _with_body(at, call)
        for name, value in pairs:
            # ``with patch(...)`` applies to its body only: never to every later call of the function
            setting = _setting(ctx, name, value, call, at, decorates, conditional=not decorates and body == (0, 0))
            yield replace(setting, body=body)


def _stance(ctx: FileContext, call: ast.Call, at: NodeAt) -> Iterator[DynamoSetting]:
    """``torch.compiler.set_stance("fail_on_recompile")`` as a call, decorator or ``with`` (its body only)."""
    stance = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == STANCE), None)
    if stance is None:
        return
    decorates = _decorated(at, call)
    setting = _setting(ctx, STANCE, stance, call, at, decorates)
    yield replace(setting, conditional=not decorates and (_with_body(at, call) != (0, 0) or _under_condition(at, call)))


def _with_body(at: NodeAt, call: ast.Call) -> tuple[int, int]:
    """The first and last line of the body of the ``with`` statement ``call`` is the context manager of."""
    for node in ast.walk(at.scope.node):
        if isinstance(node, ast.With | ast.AsyncWith) and any(item.context_expr is call for item in node.items):
            return node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
    return (0, 0)


def _under_condition(at: NodeAt, call: ast.Call) -> bool:
    """``call`` runs only under a condition of its scope: an ``if`` other than ``if __name__ == "__main__":`` (which a
    script always takes), an ``except`` or a ``case``."""
    if not at.guarded:
        return False
    enclosing = [
        node for node in ast.walk(at.scope.node) if isinstance(node, ast.If) and any(i is call for i in ast.walk(node))
    ]
    return not enclosing or any(not _is_main_test(node.test) for node in enclosing)


def _is_main_test(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def _environment(
    ctx: FileContext, key: ast.expr, value: ast.expr, where: ast.AST, at: NodeAt
) -> Iterator[DynamoSetting]:
    """``os.environ["TORCHDYNAMO_..."] = "1"`` for a variable of :data:`ENVIRONMENT`."""
    variable = key.value if isinstance(key, ast.Constant) else None
    if not isinstance(variable, str) or variable not in ENVIRONMENT:
        return
    literal = repr(value.value == "1") if isinstance(value, ast.Constant) and isinstance(value.value, str) else ""
    yield _setting(ctx, ENVIRONMENT[variable], value, where, at, literal=literal, environment=variable)


def _setting(
    ctx: FileContext,
    name: str,
    value: ast.expr,
    where: ast.AST,
    at: NodeAt,
    decorates: str = "",
    conditional: bool = False,
    literal: str | None = None,
    environment: str = "",
) -> DynamoSetting:
    if literal is None:
        literal = repr(value.value) if isinstance(value, ast.Constant) else ""
    function = at.scope.function
    return DynamoSetting(
        ALIASES.get(name, name),
        literal,
        ctx.span(where),
        function.qualname if function is not None else "",
        decorates,
        conditional or at.guarded or at.loop_depth > 0,  # a `try` body runs: `try: config.x = 1 except: ...`
        environment,
    )


def _decorated(at: NodeAt, where: ast.AST) -> str:
    """The qualified name of the function ``where`` decorates (``@torch._dynamo.config.patch(...)``), or ``""``."""
    parent = at.scope
    for node in ast.iter_child_nodes(parent.node):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(d is where for d in node.decorator_list):
            prefix = f"{parent.qualname}." if parent.qualname else ""
            return prefix + node.name
    return ""


@dataclass(frozen=True, slots=True)
class Decision:
    """A setting that applies to a compile site: ``certain`` when every program running the site makes it first."""

    setting: DynamoSetting
    certain: bool


def decide(index: WorkspaceIndex, name: str, value: str, site: CompileSite) -> Decision | None:
    """How surely ``name`` is set to ``value`` (a literal's ``repr``) for the code ``site`` compiles; None when no
    file that can run with the site's file sets it (or only to another value)."""
    path = site.span.path
    possible: Decision | None = None
    for setting in index.settings(name):
        if setting.value not in (value, "") or _too_late(index, setting):
            continue
        where = setting.span.path
        if setting.value == value and _before(index, setting, site):
            return Decision(setting, certain=True)
        if possible is None and index.files.together(where, path):
            possible = Decision(setting, certain=False)
    return possible


def _before(index: WorkspaceIndex, setting: DynamoSetting, site: CompileSite) -> bool:
    """``setting`` runs before ``site`` in every program that runs the site; an environment variable only at module
    level (in a function, it may run after the first compile has imported Dynamo)."""
    path = site.span.path
    if setting.conditional:
        return False
    if setting.body != (0, 0):  # `with patch(...):` around the site (compiled and called in its body)
        first, last = setting.body
        return setting.span.path == path and setting.function == site.scope and first <= site.span.line <= last
    if setting.environment and setting.function:
        return False
    if setting.span.path != path:
        return not setting.function and not setting.decorates and index.files.imported_by(path, setting.span.path)
    if setting.decorates:
        return setting.decorates == site.scope or site.scope.startswith(f"{setting.decorates}.")
    if setting.span.line >= site.span.line:
        return False
    return not setting.function or setting.function == site.scope


def _too_late(index: WorkspaceIndex, setting: DynamoSetting) -> bool:
    """An environment variable set below a compile site of its file: every program that runs the write has
    imported Dynamo before it, and Dynamo reads the variable only then (measured: the write changes nothing)."""
    if not setting.environment:
        return False
    summary = index.summary(setting.span.path)
    return summary is not None and any(site.span.line < setting.span.line for site in summary.compile_sites)


def in_force(index: WorkspaceIndex, name: str, value: str, sites: Iterable[CompileSite]) -> DynamoSetting | None:
    """The setting that surely sets ``name`` to ``value`` for every one of ``sites`` (None if one may run without)."""
    found: DynamoSetting | None = None
    for site in sites:
        decision = decide(index, name, value, site)
        if decision is None or not decision.certain:
            return None
        found = found or decision.setting
    return found


def _value_in_force(index: WorkspaceIndex, name: str, sites: Iterable[CompileSite]) -> DynamoSetting | None:
    """The setting that surely gives ``name`` one value for every one of ``sites`` (the last one each site runs
    after; its ``value`` is ``""`` when the scan cannot read it), or None when a site may run without, or they
    differ."""
    found: DynamoSetting | None = None
    for site in sites:
        before = [s for s in index.settings(name) if not _too_late(index, s) and _before(index, s, site)]
        if not before:
            return None
        last = max(before, key=lambda s: (s.span.path == site.span.path, s.span.line))
        if found is not None and found.value != last.value:
            return None
        found = found or last
    return found


@dataclass(frozen=True, slots=True)
class Limit:
    """How many entries a frame the sites compile may get (``recompile_limit``), and what the compile past it does:
    the frame runs eagerly, or, under ``fullgraph=True`` or ``fail_on_recompile_limit_hit``, it raises
    ``FailOnRecompileLimitHit`` (``torch/_dynamo/convert_frame.py``)."""

    value: int | None = RECOMPILE_LIMIT
    """None when the project sets it to a value the scan cannot read (``= args.limit``)."""
    accumulated: int | None = ACCUMULATED_RECOMPILE_LIMIT
    """``accumulated_recompile_limit``, torch's cap on all the entries of a frame (None when unreadable): the limit
    where it is the lower (a project that raises ``recompile_limit`` to 1e6 still stops at 256)."""
    raises_under: str = ""
    """What makes the compile past the limit raise (`` `fullgraph=True` ``), or ``""``."""
    stance: str = ""
    """The ``torch.compiler.set_stance`` in force that changes what a failed guard does (:data:`STANCE_PAST_GUARD`)."""
    related: tuple[Related, ...] = ()
    """Where the project decides the value or the error."""

    @property
    def named(self) -> str:
        """``recompile_limit (8)``, or ``accumulated_recompile_limit (256)`` where that cap is the lower."""
        if self.capped:
            return f"{limit_setting(accumulated=True)} ({self.accumulated})"
        return self.named_recompile_limit

    @property
    def named_recompile_limit(self) -> str:
        """``recompile_limit (1000000)``, whether or not the accumulated cap is the lower."""
        return limit_setting() if self.value is None else f"{limit_setting()} ({self.value})"

    @property
    def capped(self) -> bool:
        """``accumulated_recompile_limit`` stops the frame before ``recompile_limit`` does."""
        return self.value is not None and self.accumulated is not None and self.accumulated < self.value

    def allows(self, entries: int) -> bool:
        """``entries`` compiles of one frame stay within the limit (an unknown limit allows torch's default)."""
        cap = RECOMPILE_LIMIT if self.value is None else self.value
        return entries <= (min(cap, self.accumulated) if self.accumulated is not None else cap)

    def within(self, entries: int) -> str:
        """``, within recompile_limit (12)`` when only the project's raised limit keeps ``entries`` from hitting
        it, else ``""``."""
        return f", within {self.named_recompile_limit}" if entries > RECOMPILE_LIMIT and self.allows(entries) else ""

    def past(self, eager: str = "the frame runs eagerly") -> str:
        """``after recompile_limit (8) <eager>``, or the error the next compile raises instead, or what the stance
        makes torch do instead of recompiling."""
        if self.stance:
            return f'under `torch.compiler.set_stance("{self.stance}")` {STANCE_PAST_GUARD[self.stance]}'
        if self.raises_under:
            return f"after {self.named} the next compile raises `FailOnRecompileLimitHit` (under {self.raises_under})"
        return f"after {self.named} {eager}"


def recompile_limit(index: WorkspaceIndex, sites: Iterable[CompileSite]) -> Limit:
    """The :class:`Limit` of the sites: their ``recompile_limit=`` keyword, else a ``torch._dynamo.config`` setting
    every one of them surely runs after, else torch's default."""
    sites = tuple(sites)
    value: int | None = RECOMPILE_LIMIT
    related: list[Related] = []
    option = compile_option(sites, "recompile_limit")
    setting = _value_in_force(index, "recompile_limit", sites)
    if option is not None and option[0] != "None" and describes_since(COMPILE_LIMIT_KEYWORD_SINCE):
        value = _count(option[0])
        related.append(compiled_with(option, "recompile_limit"))
    elif setting is not None:
        value = _count(setting.value)
        related.append(set_here(setting))
    accumulated: int | None = ACCUMULATED_RECOMPILE_LIMIT
    cap = _value_in_force(index, "accumulated_recompile_limit", sites)
    if cap is not None:
        accumulated = _count(cap.value)
        if value is not None and accumulated is not None and accumulated < value:
            related.append(set_here(cap))
    raises_under = ""
    fullgraph = compile_option(sites, "fullgraph")
    fail = in_force(index, "fail_on_recompile_limit_hit", "True", sites)
    if fullgraph is not None and fullgraph[0] == "True":
        raises_under = "`fullgraph=True`"
        related.append(compiled_with(fullgraph, "fullgraph"))
    elif fail is not None:
        raises_under = "`fail_on_recompile_limit_hit = True`"
        related.append(set_here(fail))
    stance = _stance_in_force(index, sites)
    if stance is not None:
        related.append(set_here(stance))
    stance_name = stance.value.strip("'\"") if stance is not None else ""
    return Limit(value, accumulated, raises_under, stance_name, tuple(related))


def forced_eager(index: WorkspaceIndex, sites: Iterable[CompileSite]) -> DynamoSetting | None:
    """The ``torch.compiler.set_stance("force_eager")`` every one of ``sites`` runs under (as
    :func:`_stance_in_force` finds it): their compiled code runs eagerly, so nothing they compile is guarded."""
    return _stance_in_force(index, sites, (FORCE_EAGER,))


def _stance_in_force(
    index: WorkspaceIndex, sites: Iterable[CompileSite], stances: Iterable[str] = tuple(STANCE_PAST_GUARD)
) -> DynamoSetting | None:
    """The ``set_stance`` (one of ``stances``) every one of ``sites`` runs under, whatever the line (it is set after
    a warm-up call): an unconditional call at module level of the site's file or of a file it imports, or in the
    site's function."""
    found: DynamoSetting | None = None
    for site in sites:
        path = site.span.path
        found_here = [
            s
            for s in index.settings(STANCE)
            if not s.conditional
            and not s.decorates
            and (
                (s.span.path == path and s.function in ("", site.scope))
                or (not s.function and index.files.imported_by(path, s.span.path))
            )
        ]
        values = {s.value for s in found_here}
        if len(values) != 1 or next(iter(values)).strip("'\"") not in stances:
            return None
        found = found or found_here[0]
    return found


PAST_LIMIT = "\x00past the limit\x00"
"""Stands in a candidate's message for what happens past the recompile limit (``after recompile_limit (8) the frame
runs eagerly``): the limit and what the next compile does are the project's settings, which one file cannot tell;
:func:`with_limit` puts them in when the candidate is judged."""


def with_limit(
    index: WorkspaceIndex, sites: Iterable[CompileSite], message: str, related: tuple[Related, ...]
) -> tuple[str, tuple[Related, ...]]:
    """``message`` with :data:`PAST_LIMIT` spelled out for ``sites``, and ``related`` with where the limit is set."""
    if PAST_LIMIT not in message:
        return message, related
    limit = recompile_limit(index, sites)
    return message.replace(PAST_LIMIT, limit.past()), related + limit.related


def _count(text: str) -> int | None:
    """The whole number a literal spells (``64``, ``1e6``), or None."""
    try:
        number = float(text.replace("_", ""))
    except ValueError:
        return None
    return int(number) if number.is_integer() and number >= 0 else None


def compile_option(sites: Iterable[CompileSite], key: str) -> tuple[str, CompileSite] | None:
    """The value every one of ``sites`` passes for the ``torch.compile`` keyword ``key`` (``dynamic``), as written,
    with the first site; None when a site leaves it out or they differ."""
    found: tuple[str, CompileSite] | None = None
    for site in sites:
        value = dict(site.options).get(key)
        if value is None or (found is not None and found[0] != value):
            return None
        found = found or (value, site)
    return found


@dataclass(frozen=True, slots=True)
class GuardFilter:
    """The ``guard_filter_fn`` that decides whether the guard a finding's cost rests on exists at all."""

    name: str
    """As the site names it (``torch.compiler.keep_tensor_guards_unsafe``, or the source of a lambda)."""
    site: CompileSite
    drops: bool
    """The filter is one torch ships and drops the guard; False for a filter the scan cannot read."""

    @property
    def related(self) -> Related:
        return Related(self.site.span, f"compiled with `guard_filter_fn={self.name}` here")


def guard_filter(sites: Iterable[CompileSite], family: str) -> GuardFilter | None:
    """How the ``guard_filter_fn`` of ``sites`` treats guards of ``family`` (``torch_facts.MODULE_STATE``, ...):
    None when a site keeps the guard (there the cost stands); else unreadable when a site's filter may or may not
    drop it; else dropped (torch 2.8+)."""
    sites = tuple(sites)
    if not sites or not describes_since(GUARD_FILTER_SINCE):
        return None
    if family == GRAD_MODE and not describes_since(GRAD_MODE_FILTERED_SINCE):
        return None
    treated = [(_treats(site, family), site) for site in sites]
    if any(treatment == "keeps" for treatment, _ in treated):
        return None
    unread = next((site for treatment, site in treated if treatment == "unread"), None)
    if unread is not None:
        return GuardFilter(unread.guard_filter, unread, drops=False)
    return GuardFilter(sites[0].guard_filter, sites[0], drops=True)


def _treats(site: CompileSite, family: str) -> str:
    """``keeps``, ``drops`` or ``unread``: what the site's filter does to guards of ``family``. A filter of the
    project's own (a lambda) cannot be read; one that drops the guards of globals also drops state the compiled code
    reaches through a global, which the scan does not track."""
    if not site.guard_filter:
        return "keeps"
    drops = GUARD_FILTERS.get(site.guard_filter)
    if drops is None or (family not in drops and GLOBALS in drops):
        return "unread"
    return "drops" if family in drops else "keeps"


@dataclass(frozen=True, slots=True)
class FloatPolicy:
    """What the compiled code of some sites does with a Python float that changes: ``static`` names what keeps it a
    constant of the graph (each value compiles again), ``symbolic`` says it is dynamic from the first call; neither is
    torch's default (one recompile, then dynamic)."""

    static: str = ""
    symbolic: bool = False
    related: Related | None = None
    """Where the deciding keyword or setting is written."""


def float_policy(index: WorkspaceIndex, sites: Iterable[CompileSite]) -> FloatPolicy:
    """Measured on 2.13 (a float argument, a float module attribute changed between calls, and one per regionally
    compiled block, 12 values each): ``specialize_float = True`` keeps it static even under ``dynamic=True`` (8
    compiles and the limit); ``dynamic=False`` keeps it static; ``dynamic=True`` makes it symbolic (1 compile);
    ``automatic_dynamic_shapes = False`` keeps it static (8 + limit) unless the site says ``dynamic=True``. Older
    torch, for a module attribute: ``torch_facts.FLOAT_DYNAMIC_SINCE`` and ``FLOAT_POLICY_SINCE``."""
    sites = tuple(sites)
    if not describes_since(FLOAT_DYNAMIC_SINCE):
        return FloatPolicy(f"`specialize_float` (on by default before torch {FLOAT_DYNAMIC_SINCE})")
    special = in_force(index, "specialize_float", "True", sites)
    if special is not None:
        return FloatPolicy("`specialize_float = True`", related=set_here(special))
    if not describes_since(FLOAT_POLICY_SINCE):
        return FloatPolicy()  # 2.6 and 2.7: one recompile, then dynamic, whatever `dynamic=` says (measured)
    option = compile_option(sites, "dynamic")
    if option is not None and option[0] in ("False", "True"):
        if option[0] == "True":
            return FloatPolicy(symbolic=True)
        return FloatPolicy("`dynamic=False`", related=compiled_with(option, "dynamic"))
    automatic = in_force(index, "automatic_dynamic_shapes", "False", sites)
    if automatic is not None:
        return FloatPolicy("`automatic_dynamic_shapes = False`", related=set_here(automatic))
    return FloatPolicy()


def made_dynamic_as_input(index: WorkspaceIndex, sites: Collection[CompileSite], node: Node | None = None) -> bool:
    """Whether the torch described makes an int attribute of a module dynamic after one recompile, as 2.5 to 2.7 do
    for a module that every site's frame gets as an input (its ``self``, an argument, or a module held in an
    attribute of one); ``node`` is the method that reads it (None: the sites' own module). Not for one the frame takes
    from a module container or a global on the way (``Reach.held_apart``), nor before 2.5 or from 2.8
    (``torch_facts.INT_MODULE_ATTR_STATIC_SINCE``). The checks ask ``state_flow.ints_made_dynamic``, which also
    keeps ``range()`` bounds specialised."""
    if describes_since(INT_MODULE_ATTR_STATIC_SINCE) or not describes_since(INT_MODULE_ATTR_DYNAMIC_SINCE):
        return False
    if not sites or node is None:
        return bool(sites)
    return all(node in index.reach.reached_nodes(site) and not index.reach.held_apart(site, node) for site in sites)


def config_edit(index: WorkspaceIndex, path: str, name: str, value: str) -> Edit | None:
    """The edit that sets ``torch._dynamo.config.<name> = <value>`` below the imports of ``path`` (the module level
    of a file runs before any compile it makes or imports), with the name the file imports torch as; None when the
    file does not import torch."""
    summary = index.summary(path)
    torch = torch_name(index, path)
    if summary is None or torch is None:
        return None
    line = summary.import_end
    return Edit(Span(path, line, 1, line, 1), f"{torch}._dynamo.config.{name} = {value}\n")


def torch_name(index: WorkspaceIndex, path: str) -> str | None:
    """The name ``path`` imports torch as (``import torch``), or None."""
    summary = index.summary(path)
    imports = summary.imports if summary is not None else ()
    return next((name for name, ref in imports if ref.level == 0 and ref.dotted == "torch"), None)


def set_here(setting: DynamoSetting) -> Related:
    """The related location a finding gives for the setting that decided its cost."""
    if setting.name == STANCE:
        return Related(setting.span, f"`{SET_STANCE}({setting.value})` is called here")
    through = f" (through `{setting.environment}`)" if setting.environment else ""
    return Related(setting.span, f"`{setting.name}` is set here{through}")


def compiled_with(option: tuple[str, CompileSite], key: str) -> Related:
    """The related location of the compile site whose keyword ``key`` (``dynamic=False``) decided a cost."""
    return Related(option[1].span, f"compiled with `{key}={option[0]}` here")
