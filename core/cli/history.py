"""history: the saved benchmark runs, newest first (every team's: the command line reads the whole history)."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

from core.errors import WorkbenchError
from core.settings import load_settings

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    parser = sub.add_parser("history", help="list the saved benchmark runs, newest first")
    parser.add_argument("--model", action="append", help="only this model's runs (repeat for several)")
    parser.add_argument("--machine", action="append", help="only runs on this machine (repeat for several)")
    parser.add_argument("--since", help="only runs from this day on, YYYY-MM-DD (UTC)")
    parser.add_argument("--limit", type=int, default=50, help="at most this many runs (default 50)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def _day(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%d")
    except ValueError:
        raise WorkbenchError(f"--since takes a day as YYYY-MM-DD, e.g. 2026-01-31; got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    from core.store import open_history  # SQLAlchemy: imported only by the commands that use the history

    if args.limit < 1:
        raise WorkbenchError(f"--limit takes a positive number of runs; got {args.limit}")
    since = _day(args.since)
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
        }
        for r in found
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no saved runs match")
        return 0
    _print_table(rows)
    return 0


_COLUMNS = (("id", "id", 32), ("when (UTC)", "created_at", 16), ("model", "model", 28), ("machine", "machine", 20),
            ("owner", "owner", 24), ("configs", "configurations", 7), ("inputs", "inputs", 40))  # fmt: skip


def _cell(value: object, width: int) -> str:
    """A value for the table: on one line, control characters shown as '?', cut to ``width``."""
    text = "".join(ch if ch.isprintable() else "?" for ch in str(value))
    return text if len(text) <= width else text[: width - 1] + "…"


def _print_table(rows: list[dict[str, Any]]) -> None:
    """One run a line; the headline last, whole."""
    cells = [
        {**row, "created_at": row["created_at"][:16].replace("T", " "), "owner": row["owner"] or "anonymous"}
        for row in rows
    ]
    widths = [min(cap, max(len(title), *(len(_cell(c[key], cap)) for c in cells))) for title, key, cap in _COLUMNS]
    print("  ".join(title.ljust(w) for (title, _, _), w in zip(_COLUMNS, widths, strict=True)) + "  headline")
    for c in cells:
        line = "  ".join(_cell(c[key], w).ljust(w) for (_, key, _), w in zip(_COLUMNS, widths, strict=True))
        print(f"{line}  {_cell(c['headline'], 500)}")
