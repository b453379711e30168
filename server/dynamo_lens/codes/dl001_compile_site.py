"""DL001 · compile-site

## What it does
Marks every place that hands code to `torch.compile`: `torch.compile(fn_or_module, ...)`, `@torch.compile` and
`@torch.compile(...)`, `module.compile(...)`, `torch._dynamo.optimize(...)(fn)`, and the same through aliases
(`import torch as T`, `from torch import compile as tc`, `compiler = torch.compile`,
`functools.partial(torch.compile, mode=...)`). It says what is compiled: a function, a method, or a module instance
whose class it finds in the workspace, also when the class lives in another file.

This is not a problem. It anchors the editor features (code lens, hover, the run's per-frame counts) and tells the
other checks which code runs under Dynamo: hazards in code that a compile site reaches are warnings, hazards in
code no compile site reaches are hints.

## Why it matters
`torch.compile` compiles lazily: the first call of the compiled callable traces the Python code (the module's
`forward`, every method and submodule it calls, every function it calls that is not disabled) and installs *guards*
on what the trace read. Every later call checks the guards; a failing guard recompiles the frame, and after
`torch._dynamo.config.recompile_limit` (8 on torch 2.13) failed entries the frame runs eagerly. Knowing which
lines run under Dynamo is the first step to knowing which state it guards.

On torch 2.13, `torch.compile(module)` returns an `OptimizedModule` that shares the module's state: changing
`model.x` also changes what the compiled wrapper sees. `module.compile()` compiles in place (the module's own
`__call__` is routed through Dynamo).

## Example
```python
model = Model()
compiled = torch.compile(model, mode="reduce-overhead")   # DL001: compiles Model.forward (model.py)

@torch.compile(dynamic=True)                               # DL001: compiles step
def step(x):
    return x.sin()
```

## Use instead
Nothing to change. Compile once, outside loops (see DL201), and keep the compiled callable alive.

## Known limitations
Targets are followed through names bound in the same function or at module level (`m = Model(); torch.compile(m)`),
imports between workspace files, `self.<attr>` submodules created in `__init__`, and classmethod constructors
(`Model.from_config(...)`). A module returned by a factory function, or a callable stored in a container, is
reported with an unknown target. `model.compile()` is recognised by its shape (no positional arguments, a receiver
that is not an imported module), so another library's `compile()` method with that shape is marked too.

## Fix safety
There is no fix: this finding only marks the site.

## References
- PyTorch, `torch.compile`: https://docs.pytorch.org/docs/stable/generated/torch.compile.html
- PyTorch, "Dealing with recompilations": https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html
"""

from __future__ import annotations

from collections.abc import Iterator

from dynamo_lens.codes import Check, Rule
from dynamo_lens.model import Finding, Related, Severity, Span
from dynamo_lens.static.semantic.evaluate import External, MethodValue
from dynamo_lens.static.semantic.index import WorkspaceIndex
from dynamo_lens.static.summary import CompileSite

RULE = Rule(
    code="DL001",
    name="compile-site",
    summary="Code is handed to torch.compile here",
    default_severity=Severity.HINT,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/generated/torch.compile.html",
)


_FORM_TEXT = {
    "call": "`torch.compile`",
    "decorator": "`@torch.compile`",
    "method": "`.compile()`",
    "optimize": "`torch._dynamo.optimize`",
    "partial": "a `functools.partial` of `torch.compile`",
}


def judge_workspace(index: WorkspaceIndex) -> Iterator[Finding]:
    for summary in index.summaries:
        for site in summary.compile_sites:
            if not index.reach.own_compile(site):
                yield _finding(index, summary.path, site)


def _finding(index: WorkspaceIndex, path: str, site: CompileSite) -> Finding:
    described, related = _describe(index, site)
    options = ", ".join(f"{key}={value}" for key, value in site.options)
    message = f"{_FORM_TEXT[site.form]} compiles {described}"
    if options:
        message += f" ({options})"
    return Finding(
        code=RULE.code,
        severity=RULE.default_severity,
        span=site.span,
        message=message,
        related=related,
        data={"form": site.form, "target": described, "options": dict(site.options), "names": list(site.names)},
    )


MAX_DESCRIBED = 3


def _describe(index: WorkspaceIndex, site: CompileSite) -> tuple[str, tuple[Related, ...]]:
    """What the site compiles, in words, with where each compiled definition is: every possibility the semantic
    model finds (a factory may return one of several modules), or the source text when it finds none."""
    described: list[str] = []
    related: list[Related] = []
    values = index.reach.site_values(site)
    for entry in sorted(index.compiled_entries(site), key=str):  # one order whatever the hash seed
        if entry[0] == "function":
            function_path, qualname = entry[1]
            summary = index.summary(function_path)
            spans = [f.span for f in summary.functions if f.qualname == qualname] if summary else []
            described.append(f"function `{qualname}`")
            related.extend(_related(spans, f"`{qualname}` is defined here"))
            continue
        key, name = entry[1], entry[2]
        class_summary = index.class_summary(key)
        if class_summary is None:
            continue
        if any(isinstance(v, MethodValue) and v.cls == key and v.name == name for v in values):
            found = index.find_method(key, name)
            described.append(f"method `{key[1]}.{name}`")
            related.extend(_related([found[1].span] if found else [], f"`{key[1]}.{name}` is defined here"))
            continue
        kind = "module" if index.is_module_class(key) else "instance"
        described.append(f"a `{key[1]}` {kind} (its `{name}`)")
        related.extend(_related([class_summary.span], f"`{key[1]}` is defined here"))
    for dotted in sorted({v.dotted for v in values if isinstance(v, External) and v.instance}):
        described.append(f"a `{dotted}` module")
    if not described:
        return f"`{site.target_text}`, which cannot be followed statically", ()
    if len(described) > MAX_DESCRIBED:
        described = [*described[:MAX_DESCRIBED], f"{len(described) - MAX_DESCRIBED} more"]
    text = described[0] if len(described) == 1 else ", ".join(described[:-1]) + " or " + described[-1]
    return text, tuple(related[:MAX_DESCRIBED])


def _related(spans: list[Span], message: str) -> tuple[Related, ...]:
    return tuple(Related(span, message) for span in spans[:1])


CHECK = Check(RULE.code, judge_workspace=judge_workspace)
