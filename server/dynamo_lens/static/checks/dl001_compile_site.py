"""DL001: mark every compile site and say what it compiles (resolved across files by the index)."""

from __future__ import annotations

from collections.abc import Iterator

from dynamo_lens.model import Finding, Related, Span
from dynamo_lens.rules.dl001_compile_site import RULE
from dynamo_lens.static.checks import Check
from dynamo_lens.static.index import WorkspaceIndex
from dynamo_lens.static.summary import CompileSite

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
            yield _finding(index, summary.path, site)


def _finding(index: WorkspaceIndex, path: str, site: CompileSite) -> Finding:
    described, related = _describe(index, path, site)
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


def _describe(index: WorkspaceIndex, path: str, site: CompileSite) -> tuple[str, tuple[Related, ...]]:
    for entry in index.compiled_entries(path, site):
        if entry[0] == "function":
            function_path, qualname = entry[1]
            summary = index.summary(function_path)
            spans = [f.span for f in summary.functions if f.qualname == qualname] if summary else []
            return f"function `{qualname}`{_where(path, function_path)}", _related(
                spans, f"`{qualname}` is defined here"
            )
        key, name = entry[1], entry[2]
        found = index.find_method(key, name)
        class_summary = index.class_summary(key)
        if class_summary is None:
            continue
        if site.target.kind == "method":
            spans = [found[1].span] if found else []
            return f"method `{key[1]}.{name}`{_where(path, key[0])}", _related(
                spans, f"`{key[1]}.{name}` is defined here"
            )
        kind = "module" if index.is_module_class(key) else "instance"
        text = f"a `{key[1]}` {kind} (its `{name}`){_where(path, key[0])}"
        return text, _related([class_summary.span], f"`{key[1]}` is defined here")
    target = site.target
    if target.kind == "instance" and target.ref is not None:
        symbol = index.resolve(path, target.ref)
        if symbol is not None and symbol.kind == "function":
            return f"the result of `{target.ref.dotted}()` (what a factory returns is not followed)", ()
    if target.ref is not None:
        name = target.ref.dotted + (f".{target.member}" if target.member else "")
        return f"`{name}` (not found in the workspace)", ()
    return f"`{target.text or '?'}` (cannot tell what this is statically)", ()


def _where(site_path: str, path: str) -> str:
    return "" if path == site_path else f" from {path}"


def _related(spans: list[Span], message: str) -> tuple[Related, ...]:
    return tuple(Related(span, message) for span in spans[:1])


CHECK = Check(RULE.code, judge_workspace=judge_workspace)
