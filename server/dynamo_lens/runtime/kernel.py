"""``%load_ext dynamo_lens``: record what Dynamo does inside a live IPython or Jupyter kernel, cell by cell.

``%load_ext dynamo_lens`` attaches the shim to the kernel (torch may be imported already: ``TORCH_TRACE`` cannot be
turned on any more, but the shim listens to the structured-trace logger itself), ``%dynamo_lens`` prints what was
compiled, what recompiled and why, graph breaks and limit hits, ``%dynamo_lens --json`` the ``dynamo-lens.run``
report, ``%dynamo_lens --clear`` starts afresh, and ``%unload_ext dynamo_lens`` takes the shim out again.

A kernel runs each cell as a file of its own (ipykernel: ``/tmp/ipykernel_<pid>/<hash of the cell's text>.py``,
lines counted within the cell), and IPython's compiler maps that name to the execution count of the run
(``In [5]``, what tracebacks show). Every location of the report in a cell therefore says which run of which cell
it is (``"cell": {"execution_count": 5, "index": null, "id": ...}``: the id when the front end sent one with the
cell, the index never, since a kernel does not see the notebook), and its ``line`` is already the cell's own.

The report is kept under ``.dynamo-lens/`` of the kernel's working directory (the notebook's folder, as Jupyter and
VS Code start it), where the events stream as they happen.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from dynamo_lens.model import CellRef, plural
from dynamo_lens.runtime import shim
from dynamo_lens.runtime.report import EVENTS_SUFFIX, RunReport, map_locations

RECORDINGS = ".dynamo-lens"
"""Where a kernel keeps its recording, in its working directory (the language server looks there too)."""
RECORDING_EVENTS = f"kernel-*.json{EVENTS_SUFFIX}"
"""The event streams of kernel recordings in :data:`RECORDINGS` (the name :meth:`KernelRecording.start` gives)."""
USAGE = "usage: %dynamo_lens [--json | --clear]"


class KernelRecording:
    """The shim attached to one kernel, and what the kernel said about the cells it ran."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.cell_ids: dict[int, str] = {}
        """Execution count → the id of the cell the front end ran (``cellId`` of the request, when sent)."""
        self.collector: shim.Collector | None = None
        shell.events.register("pre_run_cell", self._before_cell)
        self.start()

    def start(self) -> None:
        directory = Path.cwd() / RECORDINGS
        directory.mkdir(exist_ok=True)
        self.report_path = directory / f"kernel-{os.getpid()}.json"
        self.collector = shim.Collector(str(self.report_path), ["<ipython kernel>"])
        self.collector.start()

    def stop(self) -> None:
        """Write the report and take the shim out (``--clear`` starts again; ``%unload_ext`` does not)."""
        if self.collector is not None:
            self.collector.finish("returned", None, None)
            self.collector.detach()
            self.collector = None

    def close(self) -> None:
        self.stop()
        self.shell.events.unregister("pre_run_cell", self._before_cell)

    def _before_cell(self, info: Any) -> None:
        cell_id = getattr(info, "cell_id", None)
        if cell_id:
            self.cell_ids[self.shell.execution_count] = str(cell_id)

    def report(self) -> RunReport:
        """The report so far, without findings."""
        assert self.collector is not None
        return RunReport.from_json(self.collector.report_so_far())

    def document(self) -> dict[str, Any]:
        """The report so far (``dynamo-lens.run``), with its findings, each location in a cell saying which."""
        from dynamo_lens.runtime.attribution import findings_from_report

        report = self.report()
        document = report.to_json()
        document["findings"] = [finding.to_json() for finding in findings_from_report(report)]
        cells = self.cells()

        def named(location: dict[str, Any]) -> dict[str, Any]:
            cell = cells.get(location["path"])
            return {**location, "cell": cell.to_json()} if cell is not None else location

        return cast(dict[str, Any], map_locations(document, named))

    def cells(self) -> dict[str, CellRef]:
        """The file of each cell the kernel ran → which run of which cell it was."""
        names: Mapping[str, int] = getattr(self.shell.compile, "_filename_map", None) or {}
        return {path: CellRef(None, count, self.cell_ids.get(count)) for path, count in names.items()}

    def summary(self) -> str:
        """What ``%dynamo_lens`` prints: the frames with their counts and culprits, then the findings."""
        from dynamo_lens.cli.run_command import finding_line, frame_table
        from dynamo_lens.output.paths import display_path
        from dynamo_lens.runtime.attribution import findings_from_report, frame_stats

        report = self.report()
        cells = self.cells()

        def display(path: str) -> str:
            cell = cells.get(path)
            return cell.describe() if cell is not None else display_path(path, Path.cwd())

        stats = frame_stats(report)
        lines = [f"dynamo-lens: recording in this kernel (torch {report.torch_version or 'unknown'})"]
        lines += frame_table(stats, display) if stats else ["no frame was compiled since recording started"]
        if stats:
            lines.append(f"in all: {report.counts().describe()}")
        lines += [finding_line(f, display) for f in findings_from_report(report)]
        if report.missing:
            lines.append(f"not collected on this torch: {plural(len(report.missing), 'source')} (see --json)")
        lines.append(f"report: {display_path(str(self.report_path), Path.cwd())} (%dynamo_lens --json prints it)")
        return "\n".join(lines)


_recording: KernelRecording | None = None


def load(shell: Any) -> None:
    """``%load_ext dynamo_lens``: start recording, and register ``%dynamo_lens``."""
    global _recording
    if _recording is not None:
        print("dynamo-lens: already recording in this kernel (%dynamo_lens shows what it saw)")
        return
    _recording = KernelRecording(shell)
    shell.register_magic_function(_magic, "line", "dynamo_lens")
    print("dynamo-lens: recording what torch.compile does in this kernel; %dynamo_lens shows it")


def unload(shell: Any) -> None:
    """``%unload_ext dynamo_lens``: write the report and take the shim out."""
    global _recording
    if _recording is not None:
        _recording.close()
        print(f"dynamo-lens: stopped recording; report in {_recording.report_path}")
        _recording = None


def _magic(line: str) -> None:
    """``%dynamo_lens [--json | --clear]``."""
    options = shlex.split(line)
    if _recording is None:
        print("dynamo-lens: not recording: run %load_ext dynamo_lens first")
    elif options == ["--json"]:
        print(json.dumps(_recording.document(), indent=1))
    elif options == ["--clear"]:
        _recording.stop()
        _recording.start()
        print("dynamo-lens: cleared; recording afresh")
    elif not options:
        print(_recording.summary())
    else:
        print(USAGE)
