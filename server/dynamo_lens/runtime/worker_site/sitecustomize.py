"""Dynamo Lens: record this Python process too, when it is part of a ``dynamo-lens run``.

The runner puts this directory first on ``PYTHONPATH`` and names the shim (``$DYNAMO_LENS_SHIM``) and the run's
worker directory (``$DYNAMO_LENS_WORKERS``), so that every Python process the run starts (``torchrun``'s ranks,
``torch.multiprocessing.spawn``'s workers) records itself, without a change to the user's code. This file first runs
the ``sitecustomize`` it hides, if the environment has one; then it waits for the program to import torch, and only
then loads the shim: a process that never imports torch pays for a look at its command line and nothing more.
Nothing here may stop the user's process from starting.
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


def _say(message: str) -> None:
    if sys.stderr is not None:
        sys.stderr.write(f"dynamo-lens: {message}\n")


class _TorchImportWatcher:
    """A meta path finder that starts the recording when the program imports torch, then steps aside."""

    def __init__(self, shim_path: str, directory: str) -> None:
        self.shim_path = shim_path
        self.directory = directory

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "torch":
            sys.meta_path.remove(self)
            try:
                spec = importlib.util.spec_from_file_location("dynamo_lens_shim", self.shim_path)
                if spec is not None and spec.loader is not None:
                    shim = importlib.util.module_from_spec(spec)
                    sys.modules["dynamo_lens_shim"] = shim
                    spec.loader.exec_module(shim)
                    shim.record_worker(self.directory)
            except Exception as exc:  # a run without this process's data beats a process that does not run
                _say(f"this process is not recorded ({type(exc).__name__}: {exc})")
        return None  # torch itself is imported as usual


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
    _run_hidden_sitecustomize()
except Exception as exc:  # as site.py does with a failing sitecustomize: say so and go on
    _say(f"the environment's sitecustomize failed ({type(exc).__name__}: {exc})")
try:
    _shim_path = os.environ.get("DYNAMO_LENS_SHIM")
    _directory = os.environ.get("DYNAMO_LENS_WORKERS")
    if _shim_path and _directory and _worth_recording(_shim_path):
        sys.meta_path.insert(0, _TorchImportWatcher(_shim_path, _directory))
except Exception as exc:
    _say(f"this process is not recorded ({type(exc).__name__}: {exc})")
