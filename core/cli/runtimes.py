"""runtimes: the builds of ONNX Runtime this machine has (core.runtime.runtimes), and what each offers."""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from core.i18n import _, pgettext

__all__ = ["register", "run"]


def register(parser: Any) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def _rows() -> list[dict[str, Any]]:
    from core.jobs.wire import to_data
    from core.runtime.runtimes import describe, installed_runtimes

    runtimes = installed_runtimes()
    with ThreadPoolExecutor(max_workers=len(runtimes)) as pool:  # each asks its own Python (~0.5 s)
        infos = list(pool.map(lambda r: describe(r.name), runtimes))
    rows = []
    for runtime, info in zip(runtimes, infos, strict=True):
        row = to_data(info)
        row.pop("paths", None)  # the sandbox's business
        rows.append({"name": runtime.name, "python": runtime.python, **{k: v for k, v in row.items() if k != "name"}})
    return rows


def _devices(devices: list[dict[str, str]]) -> str:
    return pgettext("list", ", ").join(
        _("{ep} on {type} ({vendor})").format(
            ep=d["ep"].removesuffix("ExecutionProvider"), type=d["type"], vendor=d["vendor"]
        )
        for d in devices
    )


def run(args: argparse.Namespace) -> int:
    from core.runtime.runtimes import BUILDS

    rows = _rows()
    if args.json:
        print(json.dumps({"runtimes": rows}, indent=2))
        return 0
    for row in rows:
        if row["error"]:
            print(f"{row['name']:<10} " + _("does not work: {error}").format(error=row["error"]))
            continue
        providers = pgettext("list", ", ").join(p.removesuffix("ExecutionProvider") for p in row["providers"])
        print(f"{row['name']:<10} " + _("{package} {version}: {providers}").format(
            package=row["package"], version=row["onnxruntime"], providers=providers
        ))  # fmt: skip
        if row["devices"]:
            print("           " + _("devices (get_ep_devices): {devices}").format(devices=_devices(row["devices"])))
        for plugin in row["plugins"]:
            offered = _devices(plugin["devices"]) or plugin["why_none"]
            print("           " + _("plugin {package}: {devices}").format(package=plugin["package"], devices=offered))
    missing = [name for name in BUILDS if name not in {row["name"] for row in rows}]
    if missing:
        commands = pgettext("list", ", ").join(f"make runtime-{name}" for name in missing)
        print(_("More runtimes: {commands} (README: how to add a runtime).").format(commands=commands))
    return 0
