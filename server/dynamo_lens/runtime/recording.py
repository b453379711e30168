"""``dynamo_lens.record()``: what Dynamo does inside a block of the running program, for tests, CI and notebooks.

``dynamo-lens run`` starts a script under the shim; ``record()`` attaches the same shim to the process that is
already running (torch may be imported, and compiled functions may exist), and takes every listener out again when
the block ends, so the program goes on as if nothing had watched it. The result is the same ``dynamo-lens.run``
report, and the same runtime findings (DL501 recompiled, DL502 recompile limit hit, DL503 graph break)::

    with dynamo_lens.record() as run:
        for step in range(10):
            model(batch)
    assert not [f for f in run.findings if f.code == "DL502"], run.findings

What compiled before the block is seen from its first recompile or call inside it (its earlier compiles were not
recorded); guards of a function compiled before the block carry no user stack (``missing`` says so).

Imports only the standard library and the run report's modules: no pygls, and torch only through the shim, once
the program has imported it.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from dynamo_lens.model import Finding
from dynamo_lens.runtime import shim
from dynamo_lens.runtime.report import ReportError, RunReport, load_report


@dataclass(slots=True)
class Recording:
    """One recorded block: its report once the block has ended (None inside it, or when it could not be written)."""

    report_path: Path
    report: RunReport | None = None
    _findings: list[Finding] | None = field(default=None, repr=False)

    @property
    def findings(self) -> list[Finding]:
        """The runtime findings of the block (DL501, DL502, DL503), sorted by place; none before it ended."""
        if self.report is None:
            return []
        if self._findings is None:
            from dynamo_lens.runtime.attribution import findings_from_report

            self._findings = findings_from_report(self.report)
        return self._findings


@contextmanager
def record(report: str | os.PathLike[str] | None = None) -> Iterator[Recording]:
    """Record what Dynamo does inside the ``with`` block; ``report`` is where the JSON report is written (a new
    temporary file when not given). The report and findings are on the yielded :class:`Recording` after the block,
    also when it raised (then ``report.ended_by`` is ``"exception"`` and the exception goes on)."""
    path = Path(report) if report is not None else Path(tempfile.mkdtemp(prefix="dynamo-lens-")) / "report.json"
    collector = shim.Collector(str(path), list(sys.argv))
    collector.start()
    recording = Recording(path)
    ended_by, error = "returned", None
    try:
        yield recording
    except KeyboardInterrupt:
        ended_by = "keyboard_interrupt"
        raise
    except BaseException as exc:
        ended_by = "exception"
        error = shim.error_event(exc, exc.__traceback__, collector.policy)
        raise
    finally:
        collector.finish(ended_by, None, error)
        collector.detach()
        try:
            recording.report = load_report(path)
        except ReportError:  # the shim could not write it (a full disk): the block's own outcome goes on
            recording.report = None
