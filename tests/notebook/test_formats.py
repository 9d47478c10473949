"""Each kind of PyTorch upload, rebuilt by its notebook from the files the zip puts beside it (a state_dict into
its sample architecture, a .pt2 program, a model's own code and weights), gives the outputs the app's own loader
gives on the same inputs. The cells run in this process (torch is loaded once), in the unzipped folder."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pytest

from core.errors import NotebookError
from core.model import ModelRecord, zoo
from core.model.intake import IntakeRequest, describe_files
from core.model.torchload import load_module, source_of
from core.notebook import NotebookRequest, default_plan, model_files
from core.notebook.archive import notebook_archive
from tests import builders


@pytest.fixture(autouse=True)
def imports_undone() -> Iterator[None]:
    """The notebook imports the person's module (net.py) from its folder: undone after each test."""
    path = list(sys.path)
    yield
    sys.path[:] = path
    sys.modules.pop("net", None)


def _upload(kind: str, folder: Path) -> list[Path]:
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    if kind == "code":
        return list(builders.user_code_upload(folder, "net", width=4))
    model = zoo.build_model("mlp")
    if kind == "state_dict":
        torch.manual_seed(1)  # other weights than the sample's own: the file's must be the ones loaded
        weights = {k: torch.randn_like(v) if v.is_floating_point() else v for k, v in model.state_dict().items()}
        torch.save(weights, folder / "mlp_weights.pt")
        return [folder / "mlp_weights.pt"]
    program = torch.export.export(model, (torch.randn(2, 784),))
    torch.export.save(program, str(folder / "mlp.pt2"))
    return [folder / "mlp.pt2"]


def _walk(record: ModelRecord, out: Path) -> dict[str, Any]:
    """The model step's notebook, zipped, unzipped and run cell by cell in its folder; RESULTS and the feeds."""
    plan = default_plan(record, ["model"])
    made = notebook_archive(NotebookRequest(plan=plan, files=model_files(record, plan.inputs), out_dir=str(out)))
    folder = out / "unzipped"
    with zipfile.ZipFile(made.path) as zf:
        zf.extractall(folder)
    notebook = nbformat.read(folder / made.notebook, as_version=4)
    namespace: dict[str, Any] = {}
    with contextlib.chdir(folder), contextlib.redirect_stdout(io.StringIO()) as printed:
        for cell in notebook.cells:
            if cell.cell_type == "code":
                exec(compile(cell.source, "<cell>", "exec"), namespace)  # our own generated code
    assert json.loads(printed.getvalue()[printed.getvalue().rindex("\n{") :]) == namespace["RESULTS"]
    return namespace


@pytest.mark.parametrize("kind", ["state_dict", "pt2", "code"])
def test_the_notebook_rebuilds_the_upload_as_the_app_loads_it(kind: str, tmp_path: Path) -> None:
    import torch

    paths = _upload(kind, tmp_path / "upload")
    args = '{"width": 4}' if kind == "code" else ""
    request = IntakeRequest(paths=[str(p) for p in paths], unpack_dir=str(tmp_path / "unpacked"), code_args=args)
    record = describe_files(request)
    assert record.format == kind
    if kind == "code":  # a model's code says no shapes: the Export page (or --input) gives them
        with pytest.raises(NotebookError, match="--input NAME="):
            default_plan(record)
        given = [dataclasses.replace(s, shape=list[int | str]([1, 3, 16, 16])) for s in record.inputs]
        record = dataclasses.replace(record, inputs=given)
    ran = _walk(record, tmp_path / "walk")
    assert ran["RESULTS"]["parameters"] == record.parameter_count
    feeds = [torch.from_numpy(a) for a in ran["feeds"].values()]
    with torch.no_grad():
        theirs = ran["eager"](ran["model"])
        ours = load_module(source_of(record))
        ours = ours.module() if hasattr(ours, "module") and kind == "pt2" else ours
        expected = ours(*feeds)
    np.testing.assert_allclose(theirs.numpy(), expected.numpy(), rtol=0, atol=0)
