"""Dynamo Lens: record this Python process too, when it is part of a ``dynamo-lens run``.

The runner puts this directory first on ``PYTHONPATH`` and names the shim (``$DYNAMO_LENS_SHIM``) and the run's
worker directory (``$DYNAMO_LENS_WORKERS``), so that every Python process the run starts (``torchrun``'s ranks,
``torch.multiprocessing.spawn``'s workers) loads the shim at start-up and records itself, without a change to the
user's code. Then it runs the ``sitecustomize`` this file hides, if the environment has one. Nothing here may stop
the user's process from starting, and a process that is not recorded pays for no more than reading its command line.
"""

import importlib.machinery
import importlib.util
import os
import sys


def _worth_recording(shim_path: str) -> bool:
    """Not the run's main process (the shim itself records that one), nor a helper process that runs none of the
    user's code: Inductor's compile workers (a file inside torch), ``multiprocessing``'s resource tracker and fork
    server (``python -c "from multiprocessing…"``, unlike a spawned worker's ``spawn_main``)."""
    main_file = sys.argv[0] if sys.argv and sys.argv[0] not in ("", "-c", "-m") else ""
    if main_file:
        main_file = os.path.realpath(main_file)
        if main_file == os.path.realpath(shim_path):
            return False
        torch = importlib.machinery.PathFinder.find_spec("torch")
        origin = torch.origin if torch is not None else None
        if origin and main_file.startswith(os.path.dirname(os.path.realpath(origin)) + os.sep):
            return False
    command = list(getattr(sys, "orig_argv", ()))
    code = command[command.index("-c") + 1] if "-c" in command[:-1] else ""
    return "multiprocessing" not in code or "spawn_main" in code


def _record() -> None:
    shim_path = os.environ.get("DYNAMO_LENS_SHIM")
    directory = os.environ.get("DYNAMO_LENS_WORKERS")
    if not shim_path or not directory or not _worth_recording(shim_path):
        return
    spec = importlib.util.spec_from_file_location("dynamo_lens_shim", shim_path)
    if spec is None or spec.loader is None:
        return
    shim = importlib.util.module_from_spec(spec)
    sys.modules["dynamo_lens_shim"] = shim
    spec.loader.exec_module(shim)
    shim.record_worker(directory)


def _run_hidden_sitecustomize() -> None:
    here = os.path.realpath(os.path.dirname(__file__))
    path = [entry for entry in sys.path if os.path.realpath(entry or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    hidden = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = hidden
    spec.loader.exec_module(hidden)


try:
    _record()
except Exception as exc:  # a run without this process's data beats a process that does not start
    sys.stderr.write(f"dynamo-lens: this process is not recorded ({type(exc).__name__}: {exc})\n")
_run_hidden_sitecustomize()
