"""history: the saved benchmark runs, newest first (every team's: the command line reads the whole history)."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

from core.cli.common import padded, width
from core.errors import WorkbenchError
from core.i18n import N_, _
from core.notes import say
from core.runtime.runs import KINDS
from core.settings import load_settings

__all__ = ["register", "run"]


def register(parser: Any) -> None:
    parser.add_argument("--model", action="append", help="only this model's runs (repeat for several)")
    parser.add_argument("--machine", action="append", help="only runs on this machine (repeat for several)")
    parser.add_argument("--since", help="only runs from this day on, YYYY-MM-DD (UTC)")
    parser.add_argument("--limit", type=int, default=50, help="at most this many runs (default 50)")
    parser.add_argument(
        "--import",
        dest="import_file",
        metavar="FILE",
        help="save a browser benchmark's result file (the JSON its page offers) in the history, then list",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def _day(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%d")
    except ValueError:
        raise WorkbenchError(
            _("--since takes a day as YYYY-MM-DD, e.g. 2026-01-31; got {text}").format(text=repr(text))
        ) from None


def run(args: argparse.Namespace) -> int:
    from core.store import open_history  # SQLAlchemy: imported only by the commands that use the history

    if args.limit < 1:
        raise WorkbenchError(_("--limit takes a positive number of runs; got {limit}").format(limit=args.limit))
    since = _day(args.since)
    if args.import_file:
        _import(args.import_file)
    found = open_history(load_settings()).runs(args.model, args.machine, since, limit=args.limit)
    rows: list[dict[str, Any]] = [
        {
            "id": r.id,
            "created_at": r.created_at.isoformat(timespec="seconds") + "+00:00",
            "model": r.model,
            "machine": r.machine,
            "owner": r.owner,
            "team": r.team,
            "headline": r.headline,
            "configurations": r.configurations,
            "inputs": r.inputs,
            "kind": r.kind,  # benchmark, tune, loadtest or browser
            "imported_at": r.imported_at.isoformat(timespec="seconds") + "+00:00" if r.imported_at else None,
        }
        for r in found
    ]
    if args.json:  # a sentence, in English as every text of --json
        print(json.dumps([{**row, "headline": row["headline"].english()} for row in rows], indent=2))
        return 0
    if not rows:
        print(_("no saved runs match"))
        return 0
    _print_table(rows)
    return 0


def _import(path: str) -> None:
    """Save a browser's result file (core.browser.result) as a run of the history."""
    from core.browser import browser_report
    from core.store import open_history

    try:
        with open(path, "rb") as file:
            data = json.loads(file.read(64 << 20))
    except (OSError, ValueError) as exc:
        raise WorkbenchError(
            _("{path} could not be read as JSON ({error}); give the result file the browser page downloaded.").format(
                path=path, error=exc
            )
        ) from None
    report = browser_report(data, imported_at=datetime.now(UTC))
    open_history(load_settings()).save(report)
    print(_("saved    run {run} in the history: {headline}").format(run=report.id, headline=say(report.headline)))


_COLUMNS = ((N_("id"), "id", 32), (N_("when (UTC)"), "created_at", 16), (N_("kind"), "kind", 20),
            (N_("model"), "model", 28), (N_("machine"), "machine", 20), (N_("owner"), "owner", 24),
            (N_("configs"), "configurations", 7), (N_("inputs"), "inputs", 40))  # fmt: skip


def _kind(row: dict[str, Any]) -> str:
    """The run's kind in a word, and whether it was imported."""
    said = _(KINDS[row["kind"]].TITLE) if row["kind"] in KINDS else row["kind"]
    return _("{kind}, imported").format(kind=said) if row["imported_at"] else said


def _cell(value: object, width: int) -> str:
    """A value for the table: on one line, control characters shown as '?', cut to ``width``."""
    text = "".join(ch if ch.isprintable() else "?" for ch in str(value))
    return text if len(text) <= width else text[: width - 1] + "…"


def _print_table(rows: list[dict[str, Any]]) -> None:
    """One run a line; the headline last, whole."""
    cells = [
        {
            **row,
            "created_at": row["created_at"][:16].replace("T", " "),
            "owner": row["owner"] or _("anonymous"),
            "kind": _kind(row),
        }
        for row in rows
    ]
    titles = [_(title) for title, _key, _cap in _COLUMNS]
    widths = [
        min(cap, max(width(title), *(width(_cell(c[key], cap)) for c in cells)))
        for title, (_title, key, cap) in zip(titles, _COLUMNS, strict=True)
    ]
    print("  ".join(padded(title, w) for title, w in zip(titles, widths, strict=True)) + "  " + _("headline"))
    for c in cells:
        line = "  ".join(padded(_cell(c[key], w), w) for (_title, key, _cap), w in zip(_COLUMNS, widths, strict=True))
        print(f"{line}  {_cell(say(c['headline']), 500)}")
