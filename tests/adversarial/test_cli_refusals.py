"""Every command that takes a model stops at intake's refusal, at once, and exits 2: `inspect` once printed the
refusal of a 1.9 kB function bomb (10⁸ nodes inlined) and then decoded it until the worker's time ran out."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from core.cli import parser
from tests.adversarial import hostile
from tests.cli import cli

# command -> the arguments it needs besides the model (where it would write)
COMMANDS = {
    "info": [],
    "inspect": [],
    "graph": ["-o", "{out}/graph.html"],
    "export": ["-o", "{out}/model.onnx"],
    "partition": [],
    "bench": ["--no-save"],
    "profile": [],
    "quantize": ["--mode", "dynamic", "-o", "{out}/q.onnx"],
    "upgrade": ["-o", "{out}/u.onnx"],
    "notebook": ["-o", "{out}/walk.ipynb"],
    "deploy": ["-o", "{out}/server"],
    "browser-bench": ["-o", "{out}/bench.html"],
    "tune": ["--budget", "5", "--no-save"],
    "generate": ["--new", "2"],
}
# the job that recognises the files, where it is not intake's own: inspect's decodes them in the same worker, after;
# graph's reads an .onnx file given alone in one worker, by its bytes, without an intake reading it first
FIRST_JOB = {"inspect": "decode.inspect", "graph": "graph.view"}


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Local functions that call each other 10 times, 9 deep: 82 nodes as written, 10⁸ inlined (1.9 kB)."""
    (path,) = hostile.function_bomb(tmp_path_factory.mktemp("bomb"), depth=9)
    return path


def test_every_command_that_takes_a_model_is_checked_here() -> None:
    commands = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    positional = {name: {a.dest for a in sub._actions if not a.option_strings} for name, sub in commands.items()}
    takes_a_model = {name for name, dests in positional.items() if "model" in dests}
    assert takes_a_model == set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_refused_model_stops_the_command_at_once_with_exit_2(
    command: str, bomb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs_run: list[str]
) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    extra = [a.format(out=tmp_path) for a in COMMANDS[command]]
    done = cli(command, str(bomb), *extra)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "inline them into 100,000,000 nodes" in done.stderr and "Traceback" not in done.stderr
    assert jobs_run == [FIRST_JOB.get(command, "intake.describe_files")], jobs_run  # nothing ran after the refusal
    assert done.stdout == "" and sorted(p.name for p in tmp_path.iterdir()) == ["data"]  # and nothing was written
