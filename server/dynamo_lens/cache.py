"""The per-file analysis cache: results of the per-file pass, keyed by the file's path and content hash.

Entries live under the user cache directory (``$XDG_CACHE_HOME/dynamo-lens``, else ``~/.cache/dynamo-lens``), in a
namespace that changes with the package version, the Python version, the torch the messages describe and the
package's own source files (so an edited analyzer never serves stale results). One small pickle per entry, written
atomically; an entry that cannot be read or unpickled is treated as absent. The cache holds only data this package
wrote into the user's own cache directory.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import pickle
import shutil
import sys
import tempfile
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import dynamo_lens
from dynamo_lens import torch_facts
from dynamo_lens.torch_facts import TorchTarget

CACHE_DIR_NAME = "dynamo-lens"
KEEP_NAMESPACES = 3
"""How many package builds keep their cache entries (the current one included)."""


def user_cache_root() -> Path:
    """``$XDG_CACHE_HOME/dynamo-lens`` when that variable is set to an absolute path, else ``~/.cache/dynamo-lens``."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / CACHE_DIR_NAME


class AnalysisCache:
    """Content-addressed storage of per-file results; every operation fails soft."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        """The namespace directory holding the entries."""

    @classmethod
    def in_root(cls, root: Path | None = None) -> AnalysisCache:
        """The cache for this build of the package under ``root`` (default: :func:`user_cache_root`).

        Marks this build's namespace as used now and deletes all but the most recently used
        :data:`KEEP_NAMESPACES` (every upgrade, or every edit of a development checkout, starts a new one).
        """
        root = root if root is not None else user_cache_root()
        cache = cls(root / _namespace(torch_facts.current()))
        _prune_namespaces(root, cache.directory)
        return cache

    def key(self, path: str, data: bytes) -> str:
        """The entry name for ``path`` holding ``data`` (the path matters: results carry it in their spans)."""
        digest = hashlib.blake2b(path.encode("utf-8", "surrogateescape"), digest_size=20)
        digest.update(b"\0")
        digest.update(data)
        return digest.hexdigest()

    def combined_key(self, keys: Iterable[str]) -> str:
        """One key for a whole set of entries (order does not matter), e.g. a workspace's files."""
        digest = hashlib.blake2b(b"set\0", digest_size=20)
        for key in sorted(keys):
            digest.update(key.encode("ascii"))
        return digest.hexdigest()

    def load(self, key: str) -> object | None:
        """The stored value, or None when absent or unreadable."""
        try:
            with open(self._entry(key), "rb") as handle:
                value: object = pickle.load(handle)
                return value
        except FileNotFoundError:
            return None
        except Exception:  # a corrupt or foreign entry is a miss, never an error
            return None

    def store(self, key: str, value: object) -> None:
        """Write ``value`` atomically; failures (unpicklable value, read-only or full disk) are ignored."""
        try:
            self.store_pickled(key, dumps(value))
        except pickle.PicklingError:
            return

    def store_pickled(self, key: str, blob: bytes) -> None:
        """Write an already pickled value atomically (a worker process pickles its result once, for both uses)."""
        target = self._entry(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(blob)
                os.replace(temporary, target)
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError:
            return

    def _entry(self, key: str) -> Path:
        return self.directory / key[:2] / key[2:]


def dumps(value: object) -> bytes:
    """``value`` pickled so that it loads fast: a dataclass is rebuilt by calling its class with its field values.

    Per-file results are millions of small frozen dataclasses; the default pickling of ``slots`` dataclasses goes
    through a Python-level ``__setstate__`` per object. Measured on 216 corpus summaries: pickling 0.31 s → 0.17 s,
    unpickling 0.27 s → 0.15 s, 10 % smaller. The result is an ordinary pickle (``pickle.loads`` reads it).
    """
    buffer = io.BytesIO()
    _ConstructorPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


class _ConstructorPickler(pickle.Pickler):
    def reducer_override(self, obj: object) -> Any:
        cls = type(obj)
        if cls in _CONSTRUCTOR_FIELDS:
            names = _CONSTRUCTOR_FIELDS[cls]
        else:
            names = _CONSTRUCTOR_FIELDS[cls] = _constructor_fields(cls)
        if names is None:
            return NotImplemented
        return cls, tuple([getattr(obj, name) for name in names])


_CONSTRUCTOR_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _constructor_fields(cls: type) -> tuple[str, ...] | None:
    """The fields that rebuild an instance through ``cls(*values)``, or None when that would not be faithful."""
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__"):
        return None
    fields = dataclasses.fields(cls)
    if not all(f.init for f in fields):
        return None
    return tuple(f.name for f in fields)


def _prune_namespaces(root: Path, current: Path) -> None:
    try:
        current.mkdir(parents=True, exist_ok=True)
        os.utime(current)
        others = [d for d in root.iterdir() if d.is_dir() and d.name.startswith("v") and d != current]
        others.sort(key=lambda d: d.stat().st_mtime, reverse=True)
    except OSError:
        return
    for stale in others[KEEP_NAMESPACES - 1 :]:
        shutil.rmtree(stale, ignore_errors=True)


@cache
def _namespace(torch: TorchTarget) -> str:
    """Changes whenever anything that shapes a cached result may have changed, including the torch the messages
    describe (its release and the registry that numbers its graph breaks)."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{dynamo_lens.__version__}\0{sys.version_info[:2]}\0{torch.release}\0{torch.torch_dir}\0".encode())
    package_dir = Path(dynamo_lens.__file__).parent
    for source in sorted(package_dir.rglob("*.py")):
        info = source.stat()
        digest.update(f"{source.relative_to(package_dir)}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    return f"v{dynamo_lens.__version__}-{digest.hexdigest()}"
