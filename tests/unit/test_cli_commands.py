"""The command line imports only the module of the command it runs: a quick command does not pay for numpy, ONNX
Runtime or the other commands' code (``python -m core samples`` took 0.36 s, 0.18 s since)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from core.cli import COMMANDS, parser
from core.settings import PROJECT_ROOT


def _commands(top: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_a_command_imports_its_own_module_and_nothing_heavy() -> None:
    script = """
import sys
from core.cli import main
main(["samples"])
heavy = ("numpy", "onnx", "onnxruntime", "torch", "core.cli.bench", "core.cli.compare", "core.cli.export")
print(sorted(m for m in heavy if m in sys.modules), "core.cli.samples" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines()[-1] == "[] True", done.stdout + done.stderr
    assert "tinycnn" in done.stdout  # and it ran


def test_inspect_reads_a_model_in_one_worker_and_the_command_imports_none_of_what_the_worker_does(
    tmp_path: Path,
) -> None:
    """A command's fixed cost (issue #51): the worker recognises and decodes the file in one go, and the command
    that started it imports neither onnx nor the intake's readers nor the decoder (the worker does), nor Babel to
    write its English counts."""
    model = tmp_path / "one.onnx"
    x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in "xy")
    onnx.save(helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "one", [x], [y])), model)
    script = f"""
import sys
import core.jobs.process as process
jobs = []
submit = process.submit_spec
process.submit_spec = lambda spec, backend=None: jobs.append(spec.name) or submit(spec, backend)
from core.cli import main
code = main(["inspect", {str(model)!r}])
heavy = ("numpy", "onnx", "onnxruntime", "torch", "babel", "core.model.intake", "core.decode.decoder")
heavy += ("core.model.cards",)
print(code, jobs, sorted(m for m in heavy if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines()[-1] == "0 ['decode.inspect'] []", done.stdout + done.stderr
    assert "Relu 1" in done.stdout  # and it decoded the model


def test_inspect_starts_its_worker_before_it_imports_the_job_machinery_and_the_job_runs_there(tmp_path: Path) -> None:
    """A command's fixed cost (issue #51): inspect starts its worker with the files it names (core.jobs.ahead)
    before it imports msgspec, the job runner, the records or what prints them, so the worker's imports run beside
    the command's; the job then runs in that worker, not in a second one."""
    model = tmp_path / "one.onnx"
    x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in "xy")
    onnx.save(helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "one", [x], [y])), model)
    script = f"""
import sys
import core.jobs.sandbox as sandbox
start, loaded = sandbox.start_worker, []
late = ("msgspec", "core.jobs.process", "core.decode.records", "core.model.records", "core.cli.inspect_text")
sandbox.start_worker = lambda *a, **k: loaded.append([m for m in late if m in sys.modules]) or start(*a, **k)
from core.cli import main
code = main(["inspect", {str(model)!r}])
print(code, loaded)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines()[-1] == "0 [[]]", done.stdout + done.stderr
    assert "Relu 1" in done.stdout


def test_a_command_leaves_without_tearing_the_interpreter_down_once_its_exit_handlers_ran() -> None:
    """``python -m core`` ends as a worker does (issue #51): what was registered to run at exit runs and the output
    is flushed, then the process leaves, without the interpreter's teardown of every module it imported."""
    script = """
import atexit, runpy, sys
class Kept:
    def __del__(self):
        print("torn down", flush=True)
kept = Kept()
atexit.register(print, "exit handlers ran")
sys.argv = ["core", "samples"]
runpy.run_module("core", run_name="__main__")
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "tinycnn" in done.stdout and done.stdout.rstrip().endswith("exit handlers ran")
    assert "torn down" not in done.stdout


def test_the_parser_of_one_command_is_the_whole_ones() -> None:
    whole = _commands(parser())
    assert list(whole) == list(COMMANDS)
    for name in ("bench", "browser-bench", "samples"):
        alone = _commands(parser(name))
        assert [a.dest for a in alone[name]._actions] == [a.dest for a in whole[name]._actions]
        assert [a.dest for a in alone["compare" if name != "compare" else "diff"]._actions] == ["help"]


def test_help_lists_every_command_with_its_line() -> None:
    text = parser("").format_help()
    for name, (_module, line) in COMMANDS.items():
        assert name in text and line.split(":")[0].split("(")[0].strip()[:30] in " ".join(text.split())


def test_every_measuring_command_feeds_its_model_the_same_way() -> None:
    """bench, profile, tune, loadtest and browser-bench take the same inputs' options
    (core.cli.plan.add_measured_inputs): the seed of the generated inputs, the plan's shapes, dims, values and real
    data, and a model's own code."""
    fed = {"seed", "input", "dim", "value", "data", "image", "normalise", "code_class", "code_args"}
    for name in ("bench", "profile", "tune", "loadtest", "browser-bench"):
        command = _commands(parser(name))[name]
        assert fed <= {a.dest for a in command._actions}, name


def test_a_measuring_commands_json_adds_the_inputs_it_ran_on_and_where_it_ran(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """bench, profile and tune each print their report's JSON with the same two fields added
    (core.cli.measuring.print_measured_json): the input plan the model ran on, and the environment naming the target
    the job ran on (this server when none was given)."""
    from core.cli.measuring import print_measured_json
    from core.jobs.cluster.client import LOCAL
    from core.model.inputs import BenchInput
    from core.model.measured import MeasuredModel

    model = MeasuredModel(path="m.onnx", inputs=[BenchInput(name="x", dtype="float32", shape=[1, 3], batch_axis=0)])
    print_measured_json({"id": "r1", "environment": {"machine": "m"}}, model, None)
    here = json.loads(capsys.readouterr().out)
    print_measured_json({"id": "r2", "environment": {"machine": "m"}}, model, "gpu-node")
    there = json.loads(capsys.readouterr().out)
    ran_on = [(i["name"], i["dtype"], i["shape"], i["batch_axis"]) for i in here["inputs"]]
    assert ran_on == [("x", "float32", [1, 3], 0)]
    assert here["id"] == "r1" and here["environment"] == {"machine": "m", "target": LOCAL}
    assert there["environment"]["target"] == "gpu-node"
