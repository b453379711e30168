"""DL107 · instance-scalar-in-shared-forward

## What it does
Flags a read, in `forward` (or a method it calls), of a Python `int`, `float`, `bool` or `str` attribute that differs
between the instances of a class that are compiled one by one: regional compilation of a stack of layers (`for block in
model.blocks: block.compile()`, `model.layers[i] = torch.compile(layer)`, an `isinstance` filter over `model.modules()`,
or a filter on the class's name, `submod.__class__.__name__ in self._repeated_blocks`, as diffusers'
`compile_repeated_blocks` does, where each model class lists its block classes) whose constructor stored a per-layer
value: `Block(cfg, layer_idx=i)` in a loop over `range()`, `Block(is_first=i == 0)`, `Attention(window if i % 2 == 0
else None)` inside each layer, or `Block(modulation=True)` in one stack and `Block(modulation=False)` in another. Also
flags a `torch.nn` layer that such a constructor argument sizes (`self.up = nn.Linear(32, width)` with `Block(16 * (i +
1))`), at its first call in the compiled `forward`.

## Why it matters
All the instances share one `forward` code object, and Dynamo keeps one cache of compiled entries per code object.
On torch 2.13 every `nn.Module` is unspecialized and each Python scalar attribute that the compiled code reads is
guarded by value (`EQUALS_MATCH self.layer_idx == 3`), so each instance with another value misses every existing
entry and compiles its own. Measured on torch 2.13 (`backend="eager"`, blocks compiled with `block.compile()`):

* 12 blocks, each with its index in `self.layer_idx`, read in `forward`: 8 compiles of the block's `forward`, then
  `recompile_limit` (8) is hit and the remaining blocks run eagerly (warning);
* 4 blocks with `modulation=True` or `False`, read in an `if`: 2 compiles, reused afterwards (info);
* 6 layers compiled one by one whose attention keeps a window on every other layer and `None` on the rest
  (`if self.window is not None:`): 2 compiles of the layer's `forward` (info);
* the same 12 blocks with the index never read in `forward`: 1 compile; compiled as one whole model (Dynamo inlines
  each block, the index is a constant of one graph): 1 compile.

`dynamic=True` does not help: int attributes of modules stay static (measured: 8 compiles). A float that differs per
block (`Block(1.0 / (i + 1))`) recompiles once and is then dynamic (2 compiles, info), unless the blocks are compiled
with `dynamic=False` or the project sets `automatic_dynamic_shapes = False` or `specialize_float = True`: then one
entry per value, and 12 blocks hit the limit (8 compiles, warning). Compiled with `dynamic=True` (and floats not
specialised) the float is symbolic from the first call: no finding.

Compiled with `options={"guard_filter_fn": torch.compiler.skip_guard_on_all_nn_modules_unsafe}` (or
`keep_tensor_guards_unsafe`; torch 2.8+), nothing checks which instance or which value a call runs on: the 12 blocks
share one entry (measured: 1 compile) and every block after the first computes with the first block's value, a silent
wrong result reported as a warning; a filter of the project's own (a lambda) makes the finding a hint.

The parameters of the layers an instance holds are guarded too, by shape, and their shapes stay static: twelve blocks
whose `nn.Linear` layers take the block's width compiled 8 times and hit the limit, whether the site says
`dynamic=True`, `dynamic=False` or nothing and with `force_parameter_static_shapes = False` (warning); four widths
compiled 4 times (info); the twelve compiled as one model, once.

Older torch differs, and the message follows the torch you run (measured on 2.5.1, 2.6.0 and 2.7.1): there an int
attribute of the module a compiled frame runs on is made dynamic after one recompile (2 compiles in all) unless the
code uses it as a `range()` bound; floats are static on 2.5 whatever `dynamic=` says, and made dynamic after one
recompile whatever it says on 2.6 and 2.7; the limit is called `cache_size_limit` before 2.7.

## Example
```python
class Block(nn.Module):
    def __init__(self, layer_idx):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.layer_idx = layer_idx

    def forward(self, x):
        return self.proj(x) * (self.layer_idx + 1)   # DL107: one entry per layer, eager after 8

blocks = nn.ModuleList([Block(i) for i in range(12)])
for block in blocks:
    block.compile()
```

## Use instead
Keep per-layer numbers out of the compiled code's guards: store them in a tensor buffer
(`self.register_buffer("scale", torch.tensor(...))`), give the instances the same Python state and pass what differs
as an argument, compile the whole model instead of each block, or set
`torch._dynamo.config.allow_unspec_int_on_nn_module = True` for int attributes. When the number of distinct values
is small and known, raise `torch._dynamo.config.recompile_limit` above it.

## Known limitations
An attribute counts when `__init__` stores a constructor parameter in it directly (`self.layer_idx = layer_idx`) or a
bool computed from one (`self.is_first = layer_idx == 0`), and the constructions the workspace makes pass that parameter
a loop counter (or an expression of it, or one of two values picked by it), or different `bool`/`str` literals at
different places. A loop's own names count as the counter does: `is_full = (i + 1) % 4 == 0`, `attention = cfg if
is_full else None`, or a name bound in both arms of `if i < n_dense:`. For a layer built from a config object whose
`build()` makes the class around it (torchtitan's `Block.Config(moe=...)`, linked by `__init_subclass__`), the config's
field is read as `__init__` reads it (`self.moe_enabled = config.moe is not None`). A class-name filter that reads a
class attribute through `self` counts the lists of the classes `self` can be: every subclass that sets one when a
caller's model is unknown. Only compile sites that sit in a loop are taken as compiling instances (or the layers holding
them) one by one: a loop that compiles several whole models would be taken the same way. A read that runs only under a
condition is a hint. The number of values is stated when the loop runs over a literal `range()`. A layer counts as sized
by a parameter when `__init__` builds one of the `torch.nn` layers with weights (`Linear`, `Conv*`, `*Norm`,
`Embedding`, ...) with the parameter among the arguments; custom layers and sizes computed elsewhere are not followed. A
value that reaches the constructor through a helper's parameter is followed one level, when the loop calls a
module-level function of the same file with its counter (`_build_attention(layer_id=i)`, whose `Attention(...)` passes
`use_rope=_layer_use_rope(layer_id, n)`, a helper annotated `-> bool`); helpers in other files, and methods, are not.

## Fix safety
Where the value should live depends on how the layer uses it, so no fix moves it. When a literal `range(N)` with N past
the limit builds the instances, the fix "Raise recompile_limit to N" sets `torch._dynamo.config.recompile_limit = N`
below the imports of the compile site's file; it is unsafe: it raises the limit of every compiled frame of the
program. Measured: the twelve blocks then compile twelve entries and none runs eagerly, and the finding becomes an
`info` that names the limit.

## References
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
- PyTorch, "Reducing torch.compile cold start compilation time with regional compilation":
  https://docs.pytorch.org/tutorials/recipes/regional_compilation.html
- `torch/_dynamo/config.py`: `recompile_limit`, `allow_unspec_int_on_nn_module`
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Fix, Related, Severity
from dynamo_lens.static.context import FileContext
from dynamo_lens.static.semantic import settings
from dynamo_lens.static.semantic.index import ClassKey, WorkspaceIndex
from dynamo_lens.static.semantic.instances import CHOICE, InstanceArgument, instance_arguments
from dynamo_lens.static.semantic.state_flow import ints_made_dynamic
from dynamo_lens.static.semantic.usage import READ_EVENTS
from dynamo_lens.static.summary import AttrInit, CompileSite, StateEvent
from dynamo_lens.torch_facts import INT_MODULE_ATTR_STATIC_SINCE, MODULE_STATE, torch_name

RULE = Rule(
    code="DL107",
    name="instance-scalar-in-shared-forward",
    summary="Instances compiled one by one share a forward that reads a Python scalar each instance sets differently",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
    confirmed_by=("DL501", "DL502"),
)


def collect(ctx: FileContext) -> Iterator[InstanceArgument]:
    return instance_arguments(ctx, RULE.code)


@dataclass(slots=True)
class _Values:
    """What the workspace's constructions pass for one constructor parameter of one class."""

    following: list[InstanceArgument]
    literals: dict[str, InstanceArgument]

    @property
    def differ(self) -> bool:
        return bool(self.following) or len(self.literals) > 1

    @property
    def count(self) -> int:
        """How many distinct values the instances get (0 when unknown)."""
        if self.following:
            counts = [a.count for a in self.following]
            return 0 if 0 in counts else max(counts) + len(self.literals)
        return len(self.literals)

    @property
    def kinds(self) -> set[str]:
        return {a.kind for a in self.following} | {a.kind for a in self.literals.values()}

    def shown(self) -> list[InstanceArgument]:
        return [*self.following, *self.literals.values()][:3]


def judge_workspace(index: WorkspaceIndex) -> Iterator[Finding]:
    for (cls, param), values in _parameters(index).items():
        if not values.differ:
            continue
        sites = _sites(index, cls, values)
        if not sites:
            continue
        sized: list[AttrInit] = []
        for init, kind in _attributes(index, cls, param, values):
            if kind == SHAPE:
                sized.append(init)  # one finding for all the layers the parameter sizes
                continue
            finding = _finding(index, cls, init, kind, values, sites)
            if finding is not None:
                yield finding
        if sized:
            shape_finding = _shape_finding(index, cls, param, sized, values, sites)
            if shape_finding is not None:
                yield shape_finding


def _sites(index: WorkspaceIndex, cls: ClassKey, values: _Values) -> tuple[CompileSite, ...]:
    """The compile sites in a loop that compile instances whose values differ one by one: instances of ``cls``
    itself, or (for values that follow the counter of the loop that builds the layers) the layers that hold them. A
    whole model compiled once inlines every instance, where the values are constants of one graph; and instances in
    different roles within each layer (its two norms) hold the same values in every layer."""
    looped = [s for s in index.sites_for_class(cls) if s.in_loop]
    built: set[ClassKey] = set()
    for argument in values.following:
        for ref in argument.built_with:
            key = index.resolve_class(argument.span.path, ref)
            owner = index.classes.linked_owner(key) if key is not None else None
            built.update(k for k in (key, owner) if k is not None)  # `Block.Config(...)` builds a `Block`
    found: list[CompileSite] = []
    for site in looped:
        entries = set(index.compiled_classes(site))
        if (cls in entries and values.differ) or built & entries:
            found.append(site)
    return tuple(found)


def _parameters(index: WorkspaceIndex) -> dict[tuple[ClassKey, str], _Values]:
    """Per (class, constructor parameter): the arguments that give its instances different values."""
    found: dict[tuple[ClassKey, str], _Values] = {}
    for summary in index.summaries:
        for candidate in summary.candidates:
            if not isinstance(candidate, InstanceArgument):
                continue
            cls = index.resolve_class(summary.path, candidate.ref)
            init = index.find_method(cls, "__init__") if cls is not None else None
            owner = index.classes.linked_owner(cls) if cls is not None and init is None else None
            if owner is not None and candidate.keyword:
                # a field of a config that builds its owner class (`Block.Config(moe=...)`): what the owner's
                # `__init__(self, config)` reads as `config.moe`
                init = index.find_method(owner, "__init__")
                config = init[1].params[1] if init is not None and len(init[1].params) > 1 else ""
                cls, candidate_param = owner, f"{config}.{candidate.keyword}" if config else ""
            else:
                candidate_param = ""
            if cls is None or init is None:
                continue
            params = init[1].params
            param = (
                candidate_param
                or candidate.keyword
                or (params[candidate.position + 1] if candidate.position + 1 < len(params) else "")
            )
            if not param:
                continue
            values = found.setdefault((cls, param), _Values([], {}))
            if candidate.literal:
                values.literals.setdefault(candidate.literal, candidate)
            else:
                values.following.append(candidate)
    return found


SIZED_LAYERS = frozenset(
    {"Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
     "LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Embedding", "EmbeddingBag",
     "MultiheadAttention", "PReLU"}
)  # fmt: skip
"""``torch.nn`` layers whose constructor's int arguments size their parameters."""
SHAPE = "shape"
"""The kind of a submodule whose parameters an int constructor argument sizes (``nn.Linear(32, width)``)."""


def _attributes(index: WorkspaceIndex, cls: ClassKey, param: str, values: _Values) -> Iterator[tuple[AttrInit, str]]:
    """The attributes ``__init__`` sets from ``param``, with their kind: the parameter itself, a bool computed from
    it, or a ``torch.nn`` layer it sizes (an int passed to ``nn.Linear``: the layer's parameters take its shape)."""
    summary = index.class_summary(cls)
    for init in summary.init_attrs if summary is not None else ():
        mentioned = re.search(rf"\b{re.escape(param)}\b", init.value_text) is not None
        if init.value_text == param:
            kinds = values.kinds
            if len(kinds) == 1:
                yield init, next(iter(kinds))
        elif init.kind == "bool" and mentioned:
            yield init, "bool"
        elif mentioned and values.kinds == {"int"} and _sized_layer(init):
            yield init, SHAPE


def _sized_layer(init: AttrInit) -> bool:
    """``init`` builds a ``torch.nn`` layer whose parameters its arguments size (and nothing else)."""
    if len(init.constructors) != 1:
        return False
    dotted = init.constructors[0].dotted
    return dotted.startswith("torch.nn.") and dotted.rpartition(".")[2] in SIZED_LAYERS


def _reads(index: WorkspaceIndex, cls: ClassKey, attr: str, sites: tuple[CompileSite, ...]) -> list[StateEvent]:
    """The reads of ``self.<attr>`` in the methods of ``cls`` that the sites compile."""
    reads: list[StateEvent] = []
    for owner in index.mro(cls)[0]:
        summary = index.class_summary(owner)
        for method in summary.methods if summary is not None else ():
            if set(index.sites_for_method(owner, method.name)).isdisjoint(sites):
                continue
            reads.extend(e for e in method.events if e.attr == attr and e.kind in READ_EVENTS)
    return reads


def _finding(
    index: WorkspaceIndex,
    cls: ClassKey,
    init: AttrInit,
    kind: str,
    values: _Values,
    sites: tuple[CompileSite, ...],
) -> Finding | None:
    reads = _reads(index, cls, init.name, sites)
    if not reads:
        return None  # not read by compiled code: not guarded (measured: 1 compile)
    read = next((r for r in reads if not r.guarded), reads[0])
    name, class_name = f"self.{init.name}", cls[1].rpartition(".")[2]
    count = values.count
    unspec = settings.in_force(index, "allow_unspec_int_on_nn_module", "True", sites) if kind == "int" else None
    limit = settings.recompile_limit(index, sites)
    floats = settings.float_policy(index, sites) if kind == "float" else settings.FloatPolicy()
    severity = Severity.INFO
    if kind in ("bool", CHOICE):
        cost = "one entry per value (2 compiles in all)"
    elif kind == "float" and floats.symbolic:
        return None  # measured: under dynamic=True the float is symbolic from the first call (1 compile)
    elif kind == "float" and not floats.static:
        cost = "one recompile, after which Dynamo makes the float dynamic (2 compiles in all)"
    elif unspec is not None:
        cost = "under `allow_unspec_int_on_nn_module = True` it recompiles once, then treats the int as dynamic"
    elif kind == "int" and ints_made_dynamic(index, sites, [cls], init.name):
        cost = (
            f"one recompile, after which Dynamo makes the int dynamic (before torch {INT_MODULE_ATTR_STATIC_SINCE} an "
            "int attribute of the module a compiled frame runs on is made dynamic automatically): 2 compiles in all"
        )
    elif count > 0 and limit.allows(count):
        cost = f"one entry per value ({count} compiles in all){limit.within(count)}"
    else:
        severity = Severity.WARNING
        dynamic = {
            "str": "strings are never made dynamic",
            "float": f"{floats.static} keeps floats static",
        }.get(kind, "int module attributes stay static")
        cost = f"one entry per value ({dynamic}); {limit.past('the remaining instances run eagerly')}"
    message = (
        f"`{name}` ({'one of two values' if kind == CHOICE else kind}) differs between the `{class_name}` "
        f"instances compiled one by one (or the layers that hold them), which share this `forward`: {torch_name()} "
        f"guards {'which one it holds (a value by value, a module by its type)' if kind == CHOICE else 'it by value'}, "
        f"so each instance with another value compiles its own entry of the same frame: {cost}"
    )
    if read.guarded:
        severity, message = Severity.HINT, message + " (a hint: this read runs only under a condition)"
    related = tuple(
        Related(a.span, f"built with `{a.text}`" + (" for each value of the loop counter" if not a.literal else ""))
        for a in values.shown()
    )
    source = f"`{init.value_text}`" if "." in init.value_text else "the constructor argument"
    related += (Related(init.span, f"`{name}` set from {source} in `__init__`"),)
    if unspec is not None:
        related += (settings.set_here(unspec),)
    elif limit.within(count) or severity is Severity.WARNING:
        related += limit.related
    if floats.related is not None:
        related += (floats.related,)
    fixes: tuple[Fix, ...] = ()
    raise_limit = settings.config_edit(index, sites[0].span.path, "recompile_limit", str(count))
    if severity is Severity.WARNING and count > 0 and raise_limit is not None:
        # every instance keeps an entry of its own: the values are few and known
        fixes = (Fix(f"Raise recompile_limit to {count}, one entry per value", (raise_limit,)),)
    return index.finding(
        RULE,
        read.span,
        message,
        sites,
        severity=severity,
        related=related,
        fixes=fixes,
        data={"attribute": init.name, "class": cls[1], "kind": kind, "values": count or "unknown"},
        guards_on=MODULE_STATE,
    )


def _shape_finding(
    index: WorkspaceIndex,
    cls: ClassKey,
    param: str,
    sized: list[AttrInit],
    values: _Values,
    sites: tuple[CompileSite, ...],
) -> Finding | None:
    """Layers sized by a per-instance int, at the first call of one of them in compiled code: Dynamo guards the
    shapes of the parameters the compiled code uses and keeps them static whatever ``dynamic=`` or
    ``force_parameter_static_shapes`` say (measured on 2.13: twelve widths, 8 compiles and the limit under each;
    four widths, 4 compiles)."""
    used = [(read, init) for init in sized for read in _reads(index, cls, init.name, sites)]
    if not used:
        return None  # not called by compiled code: its parameters are not guarded there
    read, _ = min(used, key=lambda pair: (pair[0].guarded, pair[0].span.line, pair[0].span.column))
    layers = list(dict.fromkeys(f"`self.{init.name}`" for _, init in used))
    class_name = cls[1].rpartition(".")[2]
    count = values.count
    limit = settings.recompile_limit(index, sites)
    if count > 0 and limit.allows(count):
        severity, cost = Severity.INFO, f"one entry per size ({count} compiles in all){limit.within(count)}"
    else:
        severity = Severity.WARNING
        cost = f"one entry per size (parameter shapes stay static); {limit.past('the remaining instances run eagerly')}"
    message = (
        f"{' and '.join(layers)} {'is' if len(layers) == 1 else 'are'} sized by `{param}`, which differs between the "
        f"`{class_name}` instances compiled one by one (they share this `forward`): {torch_name()} guards the shapes "
        f"of their parameters, so each instance with another size compiles its own entry of the same frame: {cost}"
    )
    if read.guarded:
        severity, message = Severity.HINT, message + " (a hint: this call runs only under a condition)"
    related = tuple(
        Related(a.span, f"built with `{a.text}`" + (" for each value of the loop counter" if not a.literal else ""))
        for a in values.shown()
    )
    related += tuple(
        Related(init.span, f"`self.{init.name} = {init.value_text}` in `__init__`")
        for init in dict.fromkeys(init for _, init in used)
    )
    if limit.within(count) or severity is Severity.WARNING:
        related += limit.related
    fixes: tuple[Fix, ...] = ()
    raise_limit = settings.config_edit(index, sites[0].span.path, "recompile_limit", str(count))
    if severity is Severity.WARNING and count > 0 and raise_limit is not None:
        fixes = (Fix(f"Raise recompile_limit to {count}, one entry per size", (raise_limit,)),)
    return index.finding(
        RULE,
        read.span,
        message,
        sites,
        severity=severity,
        related=related,
        fixes=fixes,
        data={"attribute": param, "class": cls[1], "kind": SHAPE, "values": count or "unknown"},
    )


CHECK = Check(RULE.code, collect=collect, judge_workspace=judge_workspace)
