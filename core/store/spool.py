"""Runs kept on disk while the history's database cannot be reached, one JSON file each, until it can."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from core.jobs.wire import to_data
from core.runtime.runs import AnyRun
from core.store.notes import read_report
from core.workspace import modified

__all__ = ["Spool", "SpooledRun"]

_SUFFIX = ".json"


@dataclass
class SpooledRun:
    """A kept run and who saved it."""

    report: AnyRun
    owner: str
    team: str


class Spool:
    """A folder of kept runs (``<run id>.json``: ``{"owner", "team", "run"}``, the run as ``to_data`` gives it,
    its kind named; an earlier version kept ``"report"``, a benchmark's record, whose settings named the kind of a
    tuning or a load test). Files are written whole (a temporary name, then renamed), so a reader never sees half a
    run."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def keep(self, report: AnyRun, owner: str, team: str) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{re.sub(r'[^A-Za-z0-9_-]', '_', report.id) or 'run'}{_SUFFIX}"
        partial = self.folder / f".{path.name}.{os.getpid()}.partial"
        partial.write_text(json.dumps({"owner": owner, "team": team, "run": to_data(report)}))
        os.replace(partial, path)
        return path

    def pending(self) -> list[Path]:
        """The kept runs, oldest first."""
        try:
            found = [p for p in self.folder.iterdir() if p.name.endswith(_SUFFIX) and not p.name.startswith(".")]
        except FileNotFoundError:
            return []
        return sorted(found, key=lambda p: (modified(p), p.name))

    def read(self, path: Path) -> SpooledRun:
        """The run kept in ``path``; ValueError when the file is not one (OSError when it is gone)."""
        data = json.loads(path.read_text())
        kept = data.get("run", data.get("report")) if isinstance(data, dict) else None
        if not isinstance(kept, dict):
            raise ValueError(f"{path} is not a kept run")
        return SpooledRun(read_report(kept), str(data.get("owner", "")), str(data.get("team", "")))

    def set_aside(self, path: Path, why: str) -> Path:
        """Move a file the database cannot take out of the way, kept under a name that says why."""
        aside = path.with_name(f"{path.name}.{why}")
        path.replace(aside)
        return aside
