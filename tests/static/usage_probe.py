"""Run fixture scripts twice: under real ``torch.compile`` and with compiling switched off, and print what happened.

Usage: ``python usage_probe.py SCRIPT [SCRIPT ...]``. Torch is imported once; before each run Dynamo is reset. For
each script one JSON object, keyed by its path::

    {"compiles": {"forward:model.py:12": 8}, "limit_hits": ["recompile_limit"], "hits": 0.0, "eager_hits": 6.0,
     "error": null}

``compiles`` counts successful compiles per code object (every frame, torch's own included: ``torch.compile`` of an
``nn.Linear`` compiles a torch frame). ``hits`` is the value of the script's module-level ``hits`` tensor (a hook
counter) after the compiled run; for such scripts ``eager_hits`` is the same after a second run where
``torch.compile`` returns its argument unchanged and ``nn.Module.compile`` does nothing: the eager program the user
means.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import runpy
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from torch_probe import dynamo_config_restored, native_stdout_silenced


class LimitHits(logging.Handler):
    """Records the recompile-limit warnings Dynamo logs."""

    def __init__(self) -> None:
        super().__init__()
        self.hits: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("torch._dynamo hit config."):
            self.hits.append(str(record.args[0]) if isinstance(record.args, tuple) else "limit")


@contextlib.contextmanager
def compiling_disabled() -> Iterator[None]:
    import torch

    def identity(model: Any = None, **_: Any) -> Any:
        return model if model is not None else (lambda fn: fn)

    def no_compile(self: Any, *args: Any, **kwargs: Any) -> None:
        return None

    saved: tuple[Callable[..., Any], Callable[..., Any]] = (torch.compile, torch.nn.Module.compile)
    torch.compile = identity
    torch.nn.Module.compile = no_compile  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.compile, torch.nn.Module.compile = saved  # type: ignore[method-assign]


def run_script(path: str) -> tuple[dict[str, Any], str | None]:
    """Run ``path`` as ``__main__`` (its directory first on sys.path, its sibling modules forgotten afterwards)."""
    scope: dict[str, Any] = {}
    error = None
    before = set(sys.modules)
    folder = Path(path).parent
    sys.path.insert(0, str(folder))
    with contextlib.redirect_stdout(io.StringIO()), dynamo_config_restored():
        try:
            scope = runpy.run_path(path, run_name="__main__")
        except BaseException as exc:  # the script's failure is data
            error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        finally:
            sys.path.remove(str(folder))
            for name in set(sys.modules) - before:
                module_file = getattr(sys.modules[name], "__file__", None)
                if module_file and folder in Path(module_file).parents:
                    del sys.modules[name]
    return scope, error


def counter(scope: dict[str, Any]) -> float | None:
    import torch

    hits = scope.get("hits")
    return float(hits) if isinstance(hits, torch.Tensor) else None


def probe(path: str, limits: LimitHits) -> dict[str, Any]:
    import torch._dynamo
    import torch._dynamo.utils as dynamo_utils

    torch._dynamo.reset()
    dynamo_utils.clear_compilation_metrics()
    limits.hits.clear()
    scope, error = run_script(path)
    compiles: dict[str, int] = {}
    for metric in dynamo_utils.get_compilation_metrics():
        if metric.fail_type is None and metric.co_name is not None:
            key = f"{metric.co_name}:{Path(str(metric.co_filename)).name}:{metric.co_firstlineno}"
            compiles[key] = compiles.get(key, 0) + 1
    result = {"compiles": compiles, "limit_hits": list(limits.hits), "hits": counter(scope), "error": error}
    result["eager_hits"] = result["eager_error"] = None
    if result["hits"] is not None:  # only hook scripts need the eager baseline
        torch._dynamo.reset()
        with compiling_disabled():
            eager_scope, result["eager_error"] = run_script(path)
        result["eager_hits"] = counter(eager_scope)
    return result


def main(paths: list[str]) -> int:
    import torch  # noqa: F401  (imported once, before any script)

    limits = LimitHits()
    logger = logging.getLogger("torch._dynamo")
    logger.addHandler(limits)
    logger.propagate = False
    with native_stdout_silenced():
        results = {path: probe(str(Path(path).resolve()), limits) for path in paths}
    json.dump(results, sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
