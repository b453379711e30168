"""What each compile site compiles, and which code that compiled code runs.

A site's target (a lowered expression) is evaluated (``evaluate.py``) into its *entries*: the ``forward`` of each
module instance it can be (``__call__`` for other objects), a method, a function, every module of an
``nn.Sequential``. From each entry the walk follows what Dynamo traces: ``self.m()``, ``super().m()`` and property
reads through the instance's MRO, and every recorded call whose callee evaluates to something of the workspace
(``self.block(x)``, ``for layer in self.layers: layer(x)``, ``helper(self, x)``, ``model(x)`` on a module passed as
an argument or read from a module-level name). Functions and methods decorated with ``torch.compiler.disable`` are
not entered. A call whose callee can be an object of several classes (an attribute each builder fills with another
embedding) runs one of them, depending on the object: each is reached only under that condition, as a call inside an
``if`` is (the elements of a container all run). The walk keeps, for every node it reaches, the hop it came from:
:meth:`Reach.path` is the call path a finding shows ("compiled here → ``GPT.forward`` → ``Block.forward``").
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from operator import attrgetter
from typing import Literal

from dynamo_lens.static import exprs
from dynamo_lens.static.context import SETTER
from dynamo_lens.static.semantic.classes import Hierarchy
from dynamo_lens.static.semantic.evaluate import (
    MAX_CALLERS,
    NO_ENV,
    Container,
    Env,
    Evaluator,
    External,
    FunctionValue,
    Instance,
    MethodValue,
    Slot,
    Value,
    Values,
    Wrapper,
    runs_in,
)
from dynamo_lens.static.semantic.workspace import ClassKey, Files, FunctionKey
from dynamo_lens.static.summary import CallSite, CompileSite, MethodSummary, Ref

ALWAYS, FIRST_CALL, CONDITIONAL = 2, 1, 0
"""How surely compiled code runs a function: on every call, on the first call (past self-resetting tests such as
``if self.first_batch:`` whose branch clears the flag), or only under a condition the scan cannot decide."""

Node = tuple[Literal["method"], ClassKey, str] | tuple[Literal["function"], FunctionKey]
"""A method as defined in a class (``("method", (path, "Block"), "forward")``) or a function."""
_State = tuple[Literal["method"], ClassKey, str, ClassKey | None] | tuple[Literal["function"], FunctionKey]
"""A node as the walk visits it: a method looked up on instances of a class (``after``: past that class of the MRO,
for ``super()``), or a function."""
_NO_SITES: tuple[CompileSite, ...] = ()
MAX_PATH = 6


class Reach:
    def __init__(self, files: Files, classes: Hierarchy, evaluator: Evaluator) -> None:
        self.files = files
        self.classes = classes
        self.evaluator = evaluator
        self._method_sites: dict[tuple[ClassKey, str], set[CompileSite]] = {}
        self._class_sites: dict[ClassKey, set[CompileSite]] = {}
        self._function_sites: dict[FunctionKey, set[CompileSite]] = {}
        self._bindings: dict[tuple[str, str, str], CompileSite] = {}
        self._parents: dict[CompileSite, dict[Node, Node | None]] = {}
        self._entries: dict[CompileSite, list[_State]] = {}
        self._successors: dict[tuple[Evaluator, _State], list[tuple[_State, int, bool]]] = {}
        self._site_evaluators: dict[CompileSite, Evaluator] = {}
        self._site_envs: dict[CompileSite, Env] = {}
        self._programs: dict[tuple[str, str], Evaluator] = {}
        self._always: dict[CompileSite, set[Node]] = {}
        self._first_call: dict[CompileSite, set[Node]] = {}
        self._apart: dict[CompileSite, set[Node]] = {}
        self._state_holders: dict[Value, list[CompileSite]] | None = None
        self._call_holders: dict[Value, list[CompileSite]] | None = None
        self._link()

    # -- queries -------------------------------------------------------------------------------------------------
    def site_values(self, site: CompileSite) -> Values:
        """What the site's target can be."""
        evaluator = self._site_evaluators.get(site, self.evaluator)
        if site.requires:
            found = evaluator.over_callers(site.target, site.span.path, site.scope, site.requires)
            if found is not None:
                return found
        return evaluator.evaluate(site.target, site.span.path, self._site_envs.get(site, NO_ENV))

    def compiled_entries(self, site: CompileSite) -> list[Node]:
        """Where compiled code starts: ``("method", class, name)`` (the method ``name`` of an instance of ``class``,
        wherever its MRO defines it) or ``("function", key)``."""
        return [("method", s[1], s[2]) if s[0] == "method" else s for s in self._entries.get(site, ())]

    def entry_classes(self, site: CompileSite) -> list[ClassKey]:
        """The classes whose instances the site compiles (or whose methods it compiles)."""
        found: list[ClassKey] = []
        for state in self._entries.get(site, ()):
            if state[0] == "method" and state[1] not in found:
                found.append(state[1])
        return found

    def sites_for_method(self, key: ClassKey, name: str) -> tuple[CompileSite, ...]:
        """Compile sites whose compiled code runs the method ``name`` *as defined in* class ``key``."""
        return _sorted(self._method_sites.get((key, name)))

    def sites_for_class(self, key: ClassKey) -> tuple[CompileSite, ...]:
        """Compile sites whose compiled code runs the ``forward`` of an instance of ``key``."""
        return _sorted(self._class_sites.get(key))

    def sites_for_function(self, key: FunctionKey) -> tuple[CompileSite, ...]:
        return _sorted(self._function_sites.get(key))

    def sites_for_scope(self, path: str, qualname: str) -> tuple[CompileSite, ...]:
        """Compile sites reaching the function or method ``qualname`` of ``path`` (a nested function inherits the
        sites of the function that defines it)."""
        if SETTER in qualname.split("."):
            return _NO_SITES  # in a property setter: runs when the property is assigned, which compiled code does not
        while qualname:
            owner, _, name = qualname.rpartition(".")
            if owner and self.files.class_summary((path, owner)) is not None:
                return self.sites_for_method((path, owner), name)
            sites = self.sites_for_function((path, qualname))
            if sites or not owner:
                return sites
            qualname = owner
        return _NO_SITES

    def scope_node(self, path: str, qualname: str) -> Node | None:
        """The node :meth:`sites_for_scope` looks up for ``qualname`` (the enclosing reached function or method)."""
        while qualname:
            owner, _, name = qualname.rpartition(".")
            if owner and self.files.class_summary((path, owner)) is not None:
                return ("method", (path, owner), name)
            if self._function_sites.get((path, qualname)) or not owner:
                return ("function", (path, qualname))
            qualname = owner
        return None

    def reached_nodes(self, site: CompileSite) -> list[Node]:
        """Every function and method the site's compiled code runs."""
        return list(self._parents.get(site, ()))

    def always_runs(self, site: CompileSite, node: Node) -> bool:
        """The site's compiled code runs ``node`` on every call: no call on the way is made only under a condition
        (an ``if`` arm, an ``except`` handler)."""
        return node in self._always.get(site, ())

    def runs_on_first_call(self, site: CompileSite, node: Node) -> bool:
        """The site's compiled code runs ``node`` at least on its first call: every call on the way is made
        unconditionally or under self-resetting tests the instance starts out passing (``NodeAt.first_call``)."""
        return node in self._first_call.get(site, ()) or self.always_runs(site, node)

    def held_apart(self, site: CompileSite, node: Node) -> bool:
        """The site's compiled code runs ``node`` on an object it takes from a module container (``for block in
        self.blocks: block(x)``, ``self.heads[i](x)``) or from a module-level name, at some hop of the way it first
        reaches it, rather than on one of its inputs (its ``self``, an argument) or an object held in their
        attributes (``self.sub(x)``): torch 2.5 to 2.7 guard the two kinds of object differently."""
        return node in self._apart.get(site, ())

    def path(self, site: CompileSite, node: Node) -> list[str]:
        """The names of the functions and methods from the site's entry to ``node`` (at most :data:`MAX_PATH`
        hops shown: the first ones and the last)."""
        parents = self._parents.get(site, {})
        if node not in parents:
            return []
        hops: list[str] = []
        current: Node | None = node
        while current is not None and len(hops) < 64:
            hops.append(label(current))
            current = parents.get(current)
        hops.reverse()
        if len(hops) > MAX_PATH:
            hops = [*hops[: MAX_PATH - 2], "…", hops[-1]]
        return hops

    def compiled_binding(self, path: str, scope: str, name: str) -> CompileSite | None:
        """The compile site if ``name`` (in function ``scope`` of ``path``, or at its module level, or imported
        from another file's module level) is a compiled callable or the instance that was compiled."""
        for key in ((path, scope, name), (path, "", name)):
            site = self._bindings.get(key)
            if site is not None:
                return site
        imported = self.files.imports(path).get(name)
        if imported is None or not imported.dotted:
            return None
        module, _, symbol = imported.dotted.rpartition(".")
        target = self.files.resolve(path, Ref(module, imported.level)) if module or imported.level else None
        if target is not None and target.kind == "module":
            return self._bindings.get((target.path, "", symbol))
        return None

    def state_holders(self) -> dict[Value, list[CompileSite]]:
        """What holds the state of compiled code, with the sites that compile it: the compiled module itself (the
        wrapper ``torch.compile(m)`` returns shares ``m``'s attributes and mode), or the module whose submodules a
        site compiles in place (``for block in model.layers: block.compile()``). Changing an attribute or the mode
        of a value in here changes what compiled code reads."""
        if self._state_holders is None:
            self._state_holders = self._holders(state=True)
        return self._state_holders

    def call_holders(self) -> dict[Value, list[CompileSite]]:
        """What runs compiled code when called, with the sites: the wrapper ``torch.compile(...)`` returned (not the
        module it wraps), a module compiled in place by ``.compile()``, a module whose submodules were compiled in
        place. Sites that compile nothing (``.compile()`` on a ``torch.nn`` layer: torch skips its frames) are
        left out."""
        if self._call_holders is None:
            self._call_holders = self._holders(state=False)
        return self._call_holders

    def _replaced(self, site: CompileSite) -> Iterator[Value]:
        """For a site whose compiled callable replaces the attribute it compiles (``model.forward =
        torch.compile(model.forward)``): what calls it (:func:`_replaced_calls`)."""
        target = exprs.without_identity(site.target)
        if isinstance(target, exprs.Attr):
            yield from _replaced_calls(self.evaluator.evaluate(target.value, site.span.path), target.attr)

    def _holders(self, state: bool) -> dict[Value, list[CompileSite]]:
        found: dict[Value, list[CompileSite]] = {}
        for site in self.files.compile_sites():
            if isinstance(exprs.without_identity(site.target), exprs.NamedInstanceOf):
                # which model's blocks a name filter compiles depends on the model the method runs on: their code is
                # compiled (reached), but no object the scan can name holds that state
                continue
            values: set[Value] = set()
            path = site.span.path
            if site.form == "decorator":
                values.update(self.evaluator.evaluate(site.target, path))  # the decorated name is the compiled one
            elif site.form != "method":
                values.add(Wrapper(path, site.span.line, site.span.column))
                # the names the wrapper is assigned to (`model = torch.compile(model)`): calls through them later
                for name in site.assigned:
                    values.add(Slot((path, "" if name in site.module_names else site.scope), name))
            root = _root(site.target)
            in_place = site.form == "method" or _element_of_something(site.target)
            if state or in_place:
                values.update(v for v in self.evaluator.evaluate(root, path) if _holds_modules(v))
            if site.replaces:
                values.update(self._replaced(site))
            if site.form == "method" and not self._entries.get(site):
                continue  # compiles nothing we know of (a torch.nn layer's frames are skipped)
            # which object it is when a name or attribute says so (``student``, not the other ``Net``), else what
            # it is (a module built in a local variable has no such identity)
            registered: set[Value] = values
            if any(isinstance(v, Slot) for v in values):
                registered = {v for v in values if isinstance(v, Slot | Wrapper)}
            for value in registered:
                found.setdefault(value, []).append(site)
        return found

    def snapshot(self) -> object:
        """Equal for two links whose sites reach the same code (the editor's links compare them)."""
        return (
            tuple(self.files.compile_sites()),
            self._method_sites,
            self._class_sites,
            self._function_sites,
            self._bindings,
            self._always,
            self._first_call,
            self._apart,
        )

    # -- the walk ------------------------------------------------------------------------------------------------
    def _link(self) -> None:
        for site in self.files.compile_sites():
            path = site.span.path
            for name in site.names:
                self._bindings.setdefault((path, site.scope, name), site)
            for name in site.module_names:
                self._bindings.setdefault((path, "", name), site)
            evaluator = self._program_evaluator(site) if site.published else self.evaluator
            self._site_evaluators[site] = evaluator
            self._site_envs[site] = self._compiled_self(site, evaluator)
            values = self.site_values(site)
            if site.form == "method":
                values = frozenset(v for v in values if not self._own_compile(v))
            entries = self._entries[site] = self._entry_states(values)
            parents: dict[Node, Node | None] = {}
            self._parents[site] = parents
            always = self._always[site] = set()
            first_call = self._first_call[site] = set()
            apart = self._apart[site] = set()
            for state, node, parent, runs, held_apart in self._walk(entries, evaluator):
                if node not in parents and held_apart:
                    apart.add(node)
                parents.setdefault(node, parent)
                if runs == ALWAYS:
                    always.add(node)
                elif runs == FIRST_CALL:
                    first_call.add(node)
                if node[0] == "method":
                    self._method_sites.setdefault((node[1], node[2]), set()).add(site)
                    if state[0] == "method" and state[2] == "forward":
                        self._class_sites.setdefault(state[1], set()).add(site)
                else:
                    self._function_sites.setdefault(node[1], set()).add(site)

    def _walk(
        self, entries: Iterable[_State], evaluator: Evaluator
    ) -> Iterator[tuple[_State, Node, Node | None, int, bool]]:
        """Every state reached from ``entries`` (breadth first), with the node it runs, the node it was reached from,
        how surely a call runs it (:data:`ALWAYS`, :data:`FIRST_CALL` or :data:`CONDITIONAL`: the least sure call on
        the way) and whether a hop on the way took the object from a container or a global (:meth:`held_apart`),
        once per better way of reaching it."""
        pending: list[tuple[_State, Node | None, int, bool]] = [(state, None, ALWAYS, False) for state in entries]
        best: dict[_State, int] = {}
        while pending:
            state, parent, runs, apart = pending.pop(0)
            if best.get(state, -1) >= runs:
                continue
            best[state] = runs
            node = self._visit(state)
            if node is None:
                continue
            yield state, node, parent, runs, apart
            pending.extend(
                (successor, node, min(runs, call), apart or hop_apart)
                for successor, call, hop_apart in self._successors_of(state, evaluator)
            )

    def in_program(self, site: CompileSite, path: str, function: str) -> bool:
        """Code of ``function`` (in ``path``) runs in the program that makes ``site``: always, unless the site is
        published (``global step; step = torch.compile(step)`` in ``setup``), whose compiled callable only the code
        ``setup`` runs, directly or not, calls (another script that imports ``step`` calls the plain def)."""
        if not site.published:
            return True
        program = self._program_evaluator(site).program
        assert program is not None
        return runs_in(program, path, function)

    def _program_evaluator(self, site: CompileSite) -> Evaluator:
        """An evaluator that knows only the program running the function that made ``site``: what that function
        calls, directly or not, and the module level of its file. A published site's compiled callable runs with
        what that program passes it, not with what every other script of the workspace would."""
        path = site.span.path
        found = self._programs.get((path, site.scope))
        if found is None:
            start = self._scope_state(path, site.scope)
            program = {(path, "")}
            for _, node, _, _, _ in self._walk([start] if start is not None else [], self.evaluator):
                program.add((node[1][0], f"{node[1][1]}.{node[2]}") if node[0] == "method" else node[1])
            found = self._programs[(path, site.scope)] = Evaluator(self.files, self.classes, frozenset(program))
        return found

    def _compiled_self(self, site: CompileSite, evaluator: Evaluator) -> Env:
        """For a site in a method that compiles its own instance's code (``torch.compile(self._step)``,
        ``torch.compile(self)``): ``self`` bound to the instances the workspace calls that method on
        (``env.compile()`` on a ``CountingEnv``), or to an instance of the defining class alone when no call says
        which. Which subclass a base class's ``compile()`` compiles is decided by the caller: a test's or a
        benchmark's own subclass is compiled only where that code calls it. A public method of a package's class is
        also offered to the package's users, on each class of the package that inherits it and runs what it compiles
        (``GymEnv(compile=True)`` through torchrl's ``EnvBase.compile``; not ``AsyncEnvPool``, whose own
        ``step_and_maybe_reset`` never calls the compiled callable)."""
        target = exprs.without_identity(site.target)
        if isinstance(target, exprs.Attr):
            target = exprs.without_identity(target.value)
        if not isinstance(target, exprs.Param) or target.index != 0 or target.function != site.scope:
            return NO_ENV
        path = site.span.path
        owner, _, name = site.scope.rpartition(".")
        summary = self.files.class_summary((path, owner)) if owner else None
        method = summary.method(name) if summary is not None else None
        if method is None or method.kind != "method":
            return NO_ENV
        pinned: set[Value] = set()
        for call, at in itertools.islice(evaluator.callers(name, path), MAX_CALLERS):
            if not isinstance(call.func, exprs.Attr) or self._is_self(call.func.value, at):
                continue  # `self.compile()` inside the class: whichever instance it is called on
            for callee in evaluator.evaluate(call.func, at):
                if isinstance(callee, MethodValue) and callee.name == name and not callee.on_class:
                    found = self.classes.find_method(callee.cls, name)
                    if found is not None and found[0] == (path, owner):
                        pinned.add(Instance(callee.cls))
        if not name.startswith("_") and self.files.offered(path):
            # a public method of a package's class is offered to its users, on any of the package's own classes
            # that inherit it: `GymEnv(..., compile=True)` in a user's script, not in the workspace
            for cls in ((path, owner), *self.classes.subclasses((path, owner))):
                found = self.classes.find_method(cls, name)
                if (
                    self.files.offered(cls[0])
                    and found is not None
                    and found[0] == (path, owner)
                    and self._runs_compiled(cls, (path, owner), site.runners)
                ):
                    pinned.add(Instance(cls))
        return Env({(path, site.scope, target.name): frozenset(pinned or {Instance((path, owner))})})

    def _runs_compiled(self, cls: ClassKey, owner: ClassKey, runners: tuple[str, ...]) -> bool:
        """An instance of ``cls`` runs the callable a method of ``owner`` keeps on it: ``cls`` inherits one of the
        ``runners`` that read it back, or overrides one with a method that calls the inherited one."""
        if not runners:
            return True
        for runner in runners:
            found = self.classes.find_method(cls, runner)
            if found is None or found[0] == owner:
                return True
            if any(e.kind == "call" and e.detail == "super" and e.attr == runner for e in found[1].events):
                return True
        return False

    def _is_self(self, expr: exprs.Expr, path: str) -> bool:
        """``expr`` is the first parameter of a method of ``path``."""
        if not isinstance(expr, exprs.Param) or expr.index != 0:
            return False
        owner = expr.function.rpartition(".")[0]
        return bool(owner) and self.files.class_summary((path, owner)) is not None

    def _scope_state(self, path: str, qualname: str) -> _State | None:
        """The state that runs the function or method ``qualname`` of ``path`` (the enclosing one, for a nested
        function the summaries do not know)."""
        while qualname:
            owner, _, name = qualname.rpartition(".")
            if owner and self.files.class_summary((path, owner)) is not None:
                return ("method", (path, owner), name, None)
            if self.files.function_summary((path, qualname)) is not None:
                return ("function", (path, qualname))
            qualname = owner
        return None

    def _entry_states(self, values: Iterable[Value]) -> list[_State]:
        """The states that calling ``values`` starts, in a fixed order: ``values`` is a set, whose order changes
        with the interpreter's string hashing, and the walk keeps the first way it reaches each node (the call
        path a finding shows)."""
        return sorted(set(self._states_of(values)), key=repr)

    def _states_of(self, values: Iterable[Value]) -> Iterator[_State]:
        for value in values:
            if isinstance(value, Instance):
                yield ("method", value.cls, self._call_method(value.cls), None)
            elif isinstance(value, MethodValue):
                yield ("method", value.cls, value.name, None)
            elif isinstance(value, FunctionValue):
                yield ("function", value.key)
            elif isinstance(value, Container) and value.sequential:
                yield from self._states_of(value.elements)

    def own_compile(self, site: CompileSite) -> bool:
        """``x.compile()`` where every class ``x`` can be defines a ``compile`` method of its own in the workspace:
        that method runs, not ``nn.Module.compile`` (its own compile sites are sites of their own)."""
        if site.form != "method":
            return False
        values = [v for v in self.site_values(site) if isinstance(v, Instance)]
        return bool(values) and all(self._own_compile(v) for v in values)

    def _own_compile(self, value: Value) -> bool:
        if not isinstance(value, Instance):
            return False
        found = self.classes.find_method(value.cls, "compile")
        return found is not None

    def _call_method(self, cls: ClassKey) -> str:
        return "forward" if self.classes.is_module_class(cls) else "__call__"

    def _visit(self, state: _State) -> Node | None:
        """The node ``state`` runs, or None when Dynamo does not trace it (unknown, or ``compiler.disable``d)."""
        if state[0] == "function":
            function = self.files.function_summary(state[1])
            return None if function is None or function.disabled else ("function", state[1])
        found = self.classes.find_method(state[1], state[2], state[3])
        if found is None or found[1].disabled:
            return None
        return ("method", found[0], state[2])

    def _successors_of(self, state: _State, evaluator: Evaluator) -> list[tuple[_State, int, bool]]:
        known = self._successors.get((evaluator, state))
        if known is None:
            known = list(dict.fromkeys(self._compute_successors(state, evaluator)))
            self._successors[(evaluator, state)] = known
        return known

    def _compute_successors(self, state: _State, evaluator: Evaluator) -> Iterator[tuple[_State, int, bool]]:
        """The states ``state`` calls, each with how surely the call is made (:data:`ALWAYS`, ...) and whether the
        call takes its object from a container or a global."""
        if state[0] == "function":
            function = self.files.function_summary(state[1])
            if function is not None:
                yield from self._called(function.calls, state[1][0], None, evaluator)
            return
        cls = state[1]
        found = self.classes.find_method(cls, state[2], state[3])
        if found is None:
            return
        owner, method = found
        yield from ((successor, runs, False) for successor, runs in self._self_calls(cls, owner, method))
        yield from self._called(method.calls, owner[0], cls, evaluator)

    def _self_calls(self, cls: ClassKey, owner: ClassKey, method: MethodSummary) -> Iterator[tuple[_State, int]]:
        """``self.m()``, ``super().m()`` and property reads of ``method`` (defined in ``owner``) on a ``cls``."""
        for event in method.events:
            runs = self._runs(event.guarded, event.first_call, cls)
            if event.kind == "call" and event.detail == "super":
                yield ("method", cls, event.attr, owner), runs
            elif event.kind in ("call", "read"):
                target = self.classes.find_method(cls, event.attr)
                if target is not None and (event.kind == "call" or target[1].kind == "property"):
                    yield ("method", cls, event.attr, None), runs

    def _runs(self, guarded: bool, first_call: tuple[tuple[str, str, bool], ...], cls: ClassKey | None) -> int:
        """How surely a call made ``guarded`` (under the self-resetting tests ``first_call``) in a method run on an
        instance of ``cls`` is made."""
        if not guarded:
            return ALWAYS
        if first_call and cls is not None and self.classes.starts_passing(cls, first_call):
            return FIRST_CALL
        return CONDITIONAL

    def _called(
        self, calls: Iterable[CallSite], path: str, cls: ClassKey | None, evaluator: Evaluator
    ) -> Iterator[tuple[_State, int, bool]]:
        env = evaluator.self_env(cls) if cls is not None else NO_ENV
        for call in calls:
            func = call.func
            if (
                cls is not None
                and isinstance(func, exprs.Attr)
                and isinstance(func.value, exprs.Param)
                and func.value.index == 0
                and self.classes.find_method(cls, func.attr) is not None
            ):
                continue  # self.m(): a state event, followed in order by _self_calls
            states = self._entry_states(evaluator.evaluate(call.func, path, env))
            # an attribute or parameter that holds an object of one of several classes runs one of them, which
            # depends on the object (the embedding a builder passed): each runs only under that condition.
            # Elements of a container all run (`for layer in self.layers`).
            one_of = not _element_of_something(func) and len({s[1] for s in states if s[0] == "method"}) > 1
            runs = CONDITIONAL if one_of else self._runs(call.guarded, call.first_call, cls)
            taken = _element_of_something(func) or isinstance(_root(func), exprs.Global | exprs.Named)
            for state in states:
                yield state, runs, taken and state[0] == "method"  # a global function is no object taken apart


def _replaced_calls(owners: Iterable[Value], attr: str) -> Iterator[Value]:
    """What calls the attribute ``attr`` of ``owners`` once a compiled callable replaced it: the method looked up on
    an instance (``model.forward(x)``, ``self.forward(x)`` in another method), and for ``forward`` the module itself
    (``model(x)``: ``nn.Module.__call__`` finds the instance's ``forward`` first)."""
    for owner in owners:
        if isinstance(owner, Instance):
            yield MethodValue(owner.cls, attr)
            if attr == "forward":
                yield owner


def _root(target: exprs.Expr) -> exprs.Expr:
    """The object a compile target is taken from: ``model`` for ``model.layers[0]``, for the loop variable of
    ``for m in model.modules()`` (whatever ``isinstance`` test narrows it), and for ``model`` itself."""
    while True:
        inner = exprs.without_identity(target)
        if isinstance(inner, exprs.Attr | exprs.Item | exprs.InstanceOf):
            target = inner.value
        elif isinstance(inner, exprs.Call) and isinstance(inner.func, exprs.Attr) and not inner.args:
            target = inner.func.value  # model.modules(), model.children()
        else:
            return target  # with its identity: which variable holds it


def _element_of_something(target: exprs.Expr) -> bool:
    """An element of a container (``model.layers[i]``, a loop variable over submodules): compiling it with
    ``torch.compile`` and storing the result back is regional compilation of the container's owner."""
    target = exprs.without_identity(target)
    while isinstance(target, exprs.Attr | exprs.InstanceOf | exprs.NamedInstanceOf):
        target = exprs.without_identity(target.value)
    return isinstance(target, exprs.Item)


def _holds_modules(value: Value) -> bool:
    return isinstance(value, Instance | Slot | Wrapper | FunctionValue | MethodValue) or (
        isinstance(value, External) and value.instance
    )


def label(node: Node) -> str:
    """``Block.forward`` or ``helper``, for messages."""
    if node[0] == "method":
        return f"{node[1][1]}.{node[2]}"
    return node[1][1]


def _sorted(sites: Iterable[CompileSite] | None) -> tuple[CompileSite, ...]:
    if not sites:
        return _NO_SITES
    return tuple(sorted(sites, key=attrgetter("order")))
