"""The per-file facts that ``summarize`` records and ``link`` consumes.

Everything here is plain frozen data (strings, ints, tuples, nested dataclasses) so that a :class:`FileSummary`
pickles cheaply across worker processes and can be cached by content hash. No AST node is ever stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dynamo_lens.model import Span
from dynamo_lens.static.exprs import LOCAL as LOCAL
from dynamo_lens.static.exprs import Expr
from dynamo_lens.static.exprs import Ref as Ref

AttrKind = Literal[
    "int", "float", "bool", "str", "none", "tensor", "parameter", "buffer", "list", "dict", "set", "tuple",
    "submodule", "unknown",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class AttrInit:
    """``self.<name> = <value>`` (or ``register_buffer``/``register_parameter``) in ``__init__``."""

    name: str
    kind: AttrKind
    span: Span
    """The target (``self.steps``) or the ``register_*`` call."""
    statement: Span
    """The whole statement, for fixes that rewrite it."""
    value_text: str
    """Source of the value (``0``, ``[]``), cut to 80 characters."""
    constructors: tuple[Ref, ...] = ()
    """Callables called in the value (``Block`` in ``nn.ModuleList([Block() for _ in range(4)])``)."""
    keys: tuple[str, ...] = ()
    """Constant string keys of a dict literal value."""


EventKind = Literal["read", "write", "aug", "mutate", "inplace", "call", "setattr"]


@dataclass(frozen=True, slots=True)
class StateEvent:
    """One access to ``self.<attr>`` inside a method body, in evaluation order.

    * ``read``: the attribute is loaded. ``write``: ``self.x = value`` (``value_kind`` says what the value looks
      like; ``detail`` is ``"concat"`` for ``self.x + ...``, ``"self"`` when the value otherwise reads the attribute
      itself, ``"const"`` for a literal, ``"param"`` for a parameter of the method (named in ``text``), ``"del"``
      for ``del self.x``). ``aug``: ``self.x op= value`` (a read and a write).
    * ``mutate``: a container mutation that reads the attribute: ``detail`` is the method (``append``) or
      ``setitem:const``/``setitem:var``/``delitem``. ``inplace``: an in-place tensor method (``add_``).
    * ``call``: ``self.<attr>(...)`` (a method, or a submodule call). ``setattr``: ``setattr(self, name, value)``
      with a non-constant name (``attr`` is the name's source text).
    """

    kind: EventKind
    attr: str
    span: Span
    branch: tuple[int, ...]
    """The ``if``/loop/``try``/``match`` bodies of its method that enclose it, outermost first (ids unique within
    the method; ``()`` = it runs whenever the method gets this far). A write makes later reads on its own path fresh:
    those whose ``branch`` starts with the write's."""
    value_kind: AttrKind = "unknown"
    detail: str = ""
    text: str = ""
    """Extra source text: the ``op=`` right-hand side, the constant key of ``setitem``, the ``setattr`` name."""
    ctor: Ref | None = None
    """For ``write``: the callable called by the value (``nn.Linear`` in ``self.sub = nn.Linear(4, 4)``)."""
    statement: Span | None = None
    """For ``aug``: the whole statement (fixes rewrite it)."""
    guarded: bool = False
    """Runs only under a condition of its method (``NodeAt.guarded``)."""
    requires: tuple[tuple[str, str, bool], ...] = ()
    """What parameters and ``self.<flag>`` attributes must be for it to run (``NodeAt.requires``)."""
    first_call: tuple[tuple[str, str, bool], ...] = ()
    """The self-resetting tests that alone guard it (``NodeAt.first_call``)."""


@dataclass(frozen=True, slots=True)
class CallRef:
    """A call of a plain or dotted name (``nn.Linear(4, 4)``) and where it is."""

    ref: Ref
    span: Span


@dataclass(frozen=True, slots=True)
class CallSite:
    """A call whose callee the workspace may know (a definition, an import, a module-level name, a parameter, an
    attribute of ``self``, an element of a container), with the arguments that can matter (``exprs.is_trivial``
    for the others)."""

    func: Expr
    args: tuple[Expr, ...]
    keywords: tuple[tuple[str, Expr], ...]
    span: Span
    name: str
    """The last name of the callee as written (``helper`` in ``utils.helper(x)``), ``""`` for none
    (``layers[0](x)``): links find the callers of a function by it before evaluating anything."""
    guarded: bool = False
    """Made only under a condition of its function (``NodeAt.guarded``)."""
    first_call: tuple[tuple[str, str, bool], ...] = ()
    """The self-resetting tests that alone guard it (``NodeAt.first_call``)."""
    in_loop: bool = False
    """Made in a ``for``/``while`` body of its function (or of the module)."""
    grad: str = ""
    """The grad mode its function sets around it (``NodeAt.grad``)."""
    grad_from: Span | None = None
    """Where that mode is set (the ``with`` item or the decorator)."""
    autocast: str = ""
    """The autocast state its function sets around it (``NodeAt.autocast``)."""
    autocast_from: Span | None = None
    """Where that state is set."""
    forced_eager: bool = False
    """Made under ``torch.compiler.set_stance("force_eager")`` (``NodeAt.forced_eager``): it runs no compiled code."""
    complete: bool = False
    """Every argument is in ``args`` and ``keywords`` (no ``*args``/``**kwargs``): a parameter it does not name keeps
    its default."""
    arg_kinds: tuple[str, ...] = ()
    """For a method call (``model.set_window(step)``): the scalar kind (``int``, ``float``, ``bool``, ``str``) of each
    positional argument, ``""`` for any other, and ``=`` before the kind of a constant (``"=int"``). What a setter
    stores."""


MethodKind = Literal["method", "property", "setter", "staticmethod", "classmethod"]
"""``setter``: a property's setter or deleter (``@x.setter``), which runs only when the property is assigned."""


@dataclass(frozen=True, slots=True)
class MethodSummary:
    name: str
    span: Span
    """The ``def`` line's name."""
    kind: MethodKind
    disabled: bool
    """Decorated with ``torch.compiler.disable`` / ``torch._dynamo.disable``: Dynamo never traces it."""
    events: tuple[StateEvent, ...]
    calls: tuple[CallSite, ...]
    params: tuple[str, ...] = ()
    """Positional parameter names, ``self`` included."""
    returns: tuple[Expr, ...] = ()
    """What its ``return`` statements return (only what can matter: see ``exprs.is_trivial``)."""
    builds: tuple[CallRef, ...] = ()
    """Calls of capitalised names (``nn.Linear(4, 4)``, ``Block(cfg)``): classes it may instantiate."""
    annotations: tuple[tuple[str, Ref], ...] = ()
    """Parameters annotated with a class (``model: GPT``, ``m: "Block | None"``): what they hold when no call says."""
    defaults: tuple[tuple[str, str], ...] = ()
    """Parameters whose default is a literal, with its ``repr``."""
    lookups: frozenset[str] = frozenset()
    """Attributes of ``self`` whose keys it looks up (``key in self.cache``, ``self.cache.get(key)``): caches."""
    range_bounds: frozenset[str] = frozenset()
    """Attributes of ``self`` it reads inside the arguments of ``range()`` (``n``, or ``cfg.n`` for
    ``self.cfg.n``): loop bounds Dynamo keeps specialised."""
    member_reads: tuple[tuple[str, str], ...] = ()
    """``self.<attr>.<member>`` loads, as (attr, member): what it reads of the objects its attributes hold."""
    name_member_reads: tuple[tuple[str, str, Expr], ...] = ()
    """``<name>.<member>`` loads of a parameter, or of a local holding what one holds (``yarn.attn_scale`` after
    ``yarn = args.yarn``; ``args.yarn.attn_scale``), as (receiver, member, what the receiver holds): what it reads of
    objects it is given."""


@dataclass(frozen=True, slots=True)
class ClassSummary:
    qualname: str
    span: Span
    bases: tuple[Ref | None, ...]
    """Resolved base expressions; None for an expression that is not a (dotted) name."""
    methods: tuple[MethodSummary, ...]
    init_attrs: tuple[AttrInit, ...]
    class_attrs: tuple[str, ...]
    """Names bound in the class body (assignments, annotations)."""
    body_start: Span
    """The first statement of the class body (where a fix can insert lines)."""
    attr_values: tuple[tuple[str, Expr], ...] = ()
    """``self.<attr> = value`` in any method, for values that can matter (a submodule, a container of them)."""
    class_values: tuple[tuple[str, Expr], ...] = ()
    """``name = value`` in the class body, for values that can matter (``model_class = Net`` in a test class): what
    ``self.<name>`` holds on an instance whose methods do not assign it."""
    owner_links: tuple[tuple[str, str], ...] = ()
    """``(nested, attr)`` when the class's ``__init_subclass__`` stores each subclass on an attribute of the class
    that subclass nests under that name (``cls.__dict__["Config"]._owner = cls``, torchtitan's ``Configurable``): a
    ``build()`` that calls ``self._owner(...)`` on such a config makes an instance of the class around it."""

    def method(self, name: str) -> MethodSummary | None:
        for method in self.methods:
            if method.name == name:
                return method
        return None

    def init_attr(self, name: str) -> AttrInit | None:
        for attr in self.init_attrs:
            if attr.name == name:
                return attr
        return None


@dataclass(frozen=True, slots=True)
class FunctionSummary:
    """A function that is not a method (module level or nested)."""

    qualname: str
    span: Span
    calls: tuple[CallSite, ...]
    disabled: bool
    params: tuple[str, ...] = ()
    """Positional parameter names."""
    returns: tuple[Expr, ...] = ()
    """What its ``return`` statements return (only what can matter)."""
    annotations: tuple[tuple[str, Ref], ...] = ()
    """Parameters annotated with a class (``model: GPT``)."""
    defaults: tuple[tuple[str, str], ...] = ()
    """Parameters whose default is a literal, with its ``repr``."""
    vararg: str = ""
    """The name of its ``*args`` parameter, ``""`` for none."""


@dataclass(frozen=True, slots=True)
class ModeSwitch:
    """``<receiver>.eval()`` or ``<receiver>.train(...)``: ``mode`` is ``eval``, ``train`` or ``runtime`` (a flag
    known only at run time)."""

    receiver: Expr
    receiver_text: str
    """The receiver's source text (cut to 40 characters)."""
    mode: str
    span: Span
    function: str
    """Qualified name of the function it is in (``""`` at module level)."""
    in_loop: bool


@dataclass(frozen=True, slots=True)
class AttrWrite:
    """``<receiver>.<attr> = value`` (or ``op=``) on an object other than the function's own ``self``:
    ``self.model.split_embed = True`` in a trainer, ``trainer.model.k = 3``, ``model.k = 3`` on a parameter."""

    receiver: Expr
    receiver_text: str
    """The receiver's source text (cut to 40 characters)."""
    attr: str
    kind: str
    """What the value is (``values.kind_of``; ``unknown`` when the expression does not say)."""
    constant: bool
    """The value is a literal."""
    aug: bool
    """An ``op=``: the new value depends on the old one."""
    span: Span
    """The target ``<receiver>.<attr>``."""
    function: str
    """Qualified name of the function it is in (``""`` at module level)."""
    in_loop: bool
    guarded: bool
    """Made only under a condition of its function (how often it runs is the program's business)."""


@dataclass(frozen=True, slots=True)
class DynamoSetting:
    """``torch._dynamo.config.<name> = <value>``, ``<name>=<value>`` in ``torch._dynamo.config.patch(...)``, the
    environment variable Dynamo reads the setting from, or ``torch.compiler.set_stance(<value>)`` (name ``stance``)."""

    name: str
    """The setting's current name (``cache_size_limit`` is recorded as ``recompile_limit``)."""
    value: str
    """The ``repr`` of the literal assigned (``True``, ``64``), ``""`` when it is not a literal."""
    span: Span
    function: str
    """Qualified name of the function it is made in (``""`` at module level)."""
    decorates: str = ""
    """For a ``patch`` decorator: the qualified name of the function it applies to."""
    conditional: bool = False
    """Made under an ``if``/loop/``try`` of its scope: not every run makes it."""
    environment: str = ""
    """The environment variable it is made through (``os.environ["TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS"] = "1"``),
    ``""`` for the config itself. Dynamo reads it once, when ``torch._dynamo`` is first imported."""
    body: tuple[int, int] = (0, 0)
    """For ``with torch._dynamo.config.patch(...):``, the first and last line of the body, where it is in force."""


@dataclass(frozen=True, slots=True)
class ModuleBinding:
    """A module-level ``name = value`` (or loop variable, ``with ... as name``) of the file."""

    name: str
    line: int
    value: Expr


CompileForm = Literal["call", "decorator", "method", "optimize", "partial"]


@dataclass(frozen=True, slots=True)
class CompileSite:
    """One place that compiles something (DL001)."""

    span: Span
    """The call (``torch.compile(model)``), the decorator expression, or ``model.compile()``."""
    form: CompileForm
    target: Expr
    """What is compiled (``torch.compile(<target>)``, ``<target>.compile()``, the decorated definition)."""
    target_text: str
    """The target's source text (cut to 60 characters), for messages."""
    scope: str
    """Qualified name of the enclosing function (``""`` at module level)."""
    names: tuple[str, ...]
    """Local names that refer to the compiled callable in ``scope``: the assigned name, and the compiled instance's
    own name (``model.compile()`` compiles ``model`` in place; ``cm = torch.compile(m)`` shares ``m``'s state)."""
    options: tuple[tuple[str, str], ...]
    """Keyword arguments as written (``("dynamic", "True")``), source text cut to 80 characters."""
    in_loop: bool
    """Evaluated inside a ``for``/``while`` body of its scope."""
    assigned: tuple[str, ...] = ()
    """Those of ``names`` the compiled result is assigned to (``cm`` in ``cm = torch.compile(m)``, ``model`` in
    ``model = torch.compile(model)``): calling them runs compiled code."""
    module_names: tuple[str, ...] = ()
    """Those of ``names`` that are module-level names (the site is at module level, or its function declares them
    ``global``): other functions and files see them."""
    requires: tuple[tuple[str, str, bool], ...] = ()
    """What parameters of its function must be for the compile to run (``NodeAt.requires``): ``("enable_compile",
    "truth", True)`` inside ``if enable_compile:``; a call that passes a literal ruling it out compiles nothing."""
    published: bool = False
    """Made in a function that stores the compiled callable where every caller finds it (a name it declares
    ``global``, ``mod.f = torch.compile(mod.f)`` on an imported module): only the program that runs that function
    calls compiled code (``litgpt``'s generate scripts each compile the shared ``next_token`` in their own ``main``)."""
    runners: tuple[str, ...] = ()
    """For a site in a method that keeps the compiled callable on ``self`` (``self.__dict__["_compiled_step"] =
    torch.compile(self._step)``): the methods of its class that read it back, the only ones that run it. A subclass
    that overrides them all never runs compiled code (torchrl's ``AsyncEnvPool.step_and_maybe_reset``). Empty when
    the callable is not kept on ``self`` or no method of the class reads it."""
    guard_filter: str = ""
    """The ``guard_filter_fn`` of its ``options={...}``: a dotted name (``torch.compiler.keep_tensor_guards_unsafe``),
    the source text of one the scan cannot resolve, or ``""``."""
    replaces: bool = False
    """The compiled callable is assigned back to the attribute it was taken from (``model.forward =
    torch.compile(model.forward)``, ``self.step = torch.compile(self.step)``): calling that attribute of the object
    runs compiled code, and for ``forward`` so does calling the module."""
    called_once: bool = False
    """The compiled callable is called once, right where it is made (``torch.compile(module)(x)``, outside loops), on
    a local of its function that no other site there compiles: when that local holds an object the function builds
    (``module = Net().eval()``, or a helper's ``return Net(...)``), its compiled code runs one call for it, and nothing
    that call leaves in the object's state reaches a later compiled call through this site."""

    @property
    def order(self) -> tuple[str, int, int]:
        """Where it stands in the workspace (path, line, column): how sites are listed and which one is shown first."""
        return (self.span.path, self.span.line, self.span.column)


@dataclass(frozen=True, slots=True)
class Candidate:
    """Base of the per-file facts a check records for its ``judge``; checks subclass it (frozen, slots)."""

    code: str
    span: Span


@dataclass(frozen=True, slots=True)
class FileSummary:
    path: str
    error: str | None = None
    """Why the file could not be (fully) analysed, e.g. ``SyntaxError: ... (line 12)``; facts above it are kept."""
    imports: tuple[tuple[str, Ref], ...] = ()
    """Local name → what it refers to, for every import and alias in the file (last binding wins)."""
    classes: tuple[ClassSummary, ...] = ()
    functions: tuple[FunctionSummary, ...] = ()
    bindings: tuple[ModuleBinding, ...] = ()
    """Module-level bindings of names that are neither definitions nor imports, for values that can matter."""
    calls: tuple[CallSite, ...] = ()
    """Calls made at module level (``generate(model, ...)`` under ``if __name__ == "__main__":``)."""
    switches: tuple[ModeSwitch, ...] = ()
    """Every ``.eval()`` / ``.train()`` call of the file."""
    writes: tuple[AttrWrite, ...] = ()
    """Attribute writes on objects other than a method's own ``self``."""
    settings: tuple[DynamoSetting, ...] = ()
    """The Dynamo settings the file changes (``static/semantic/settings.py``)."""
    resets: tuple[tuple[Span, str], ...] = ()
    """``torch._dynamo.reset()`` / ``torch.compiler.reset()`` calls made in a function (with its qualified name)."""
    compile_sites: tuple[CompileSite, ...] = ()
    candidates: tuple[Candidate, ...] = ()
    import_end: int = 1
    """The line after the last top-level import (where a fix inserts a module-level statement)."""
    skipped: bool = False
    """True when the text prefilter decided the file cannot matter (nothing was parsed)."""
    names: tuple[tuple[str, int], ...] = ()
    """Every dotted name outside the file that anything above refers to, with its relative-import level: which
    files it can reach (computed once per file, so the workspace's file graph costs no walk over expressions)."""
