"""What the commands that measure a model on a runtime share (bench, profile, tune): the options that follow their
own (the input plan, the target, --json) and the fields every one of their JSON answers adds to its report's."""

from __future__ import annotations

import json
from typing import Any

from core.cli.common import add_target_argument, environment_json
from core.cli.plan import add_measured_inputs, plan_json
from core.model.measured import MeasuredModel

__all__ = ["add_measuring_arguments", "print_measured_json"]


def add_measuring_arguments(parser: Any) -> None:
    """The options a measuring command takes after its own: what it feeds the model (``add_measured_inputs``),
    --target and --json (read back with ``print_measured_json``)."""
    add_measured_inputs(parser)
    add_target_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")


def print_measured_json(data: dict[str, Any], model: MeasuredModel, target: str | None) -> None:
    """A measuring command's JSON: its report's ``data`` with the inputs ``model`` ran on and the environment
    naming the target it ran on."""
    data["inputs"] = plan_json(model.inputs)
    data["environment"] = environment_json(data["environment"], target)
    print(json.dumps(data, indent=2))
