"""targets: where jobs can run: this server and each target of the Ray cluster, with hardware and providers."""

from __future__ import annotations

import argparse
import json
from typing import Any

from core.errors import TargetError
from core.i18n import _
from core.settings import load_settings

__all__ = ["register", "run"]


def register(parser: Any) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from core.cli.common import cluster_at
    from core.jobs.cluster.client import LOCAL
    from core.jobs.wire import to_data
    from core.runtime.hardware import (  # here, where nvidia-smi sees this server's GPUs
        HardwareRequest,
        describe_hardware,
    )

    hardware = describe_hardware(HardwareRequest())
    here = {"name": LOCAL, "status": "alive", "address": "", "gpus": len(hardware.gpus), "hardware": to_data(hardware)}
    rows = [here]
    address = load_settings().cluster_address
    warning = ""
    if address:
        try:
            targets = cluster_at(address).targets()
        except TargetError as exc:
            warning = str(exc)
        else:
            rows += [
                {
                    "name": t.name,
                    "status": t.status,
                    "address": t.address,
                    "gpus": t.gpus,
                    "hardware": to_data(t.hardware),
                }
                for t in targets
            ]
    if args.json:
        print(json.dumps({"cluster": address, "warning": warning, "targets": rows}, indent=2))
        return 0
    if warning:
        print(_("warning: {message}").format(message=warning))
    for row in rows:
        hw = row["hardware"] or {}
        providers = ", ".join(p.removesuffix("ExecutionProvider") for p in hw.get("providers", [])) or "-"
        flags = ", ".join(hw.get("cpu_flags", []))
        print(f"{row['name']:<16} {row['status']:<6} {row['address'] or '-':<15} {hw.get('cpu', '-')}")
        if hw:
            gpus = _("; GPUs: {gpus}").format(gpus=", ".join(hw["gpus"])) if hw.get("gpus") else ""
            gpus = gpus or (_("; {count} GPU(s) (Ray's count)").format(count=row["gpus"]) if row["gpus"] else "")
            line = _("{cores} cores, {memory} GB, {flags}").format(
                cores=hw["physical_cores"], memory=f"{hw['memory_gb']:.0f}", flags=flags or _("no vector flags")
            )
            print(f"{'':<16} {line}{gpus}")
            print(f"{'':<16} " + _("providers: {providers}").format(providers=providers))
    if not address:
        print(_("(no cluster: set cluster_address, WORKBENCH_CLUSTER_ADDRESS, to a Ray cluster's head to add targets)"))
    return 0
