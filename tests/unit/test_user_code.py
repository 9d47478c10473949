"""A model given as its own code and weights: its classes read from the source, built and loaded as the person
says, refused with a clear message when anything does not fit, and rebuilt the same way by every later job."""

from __future__ import annotations

import dataclasses
import json
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from core.errors import CodeError, IntakeError, UnsafeModelError
from core.export import ExportOptions, ExportRequest
from core.export.code import reproduce_code
from core.export.exporter import export_model
from core.model.code_listing import CodeFile, default_args, list_classes, module_classes
from core.model.intake import IntakeRequest, describe_files
from core.model.records import ModelRecord
from core.model.torchload import load_module, source_of
from core.notes import say
from core.settings import IntakeLimits
from tests import builders
from tests.cli import cli


@pytest.fixture(autouse=True)
def imports_undone() -> Iterator[None]:
    """Intake runs in this process here (in the app it is a worker of its own): the person's modules and path
    entries are removed after each test, as the end of a worker removes them."""
    path, modules = list(sys.path), set(sys.modules)
    yield
    sys.path[:] = path
    for name in set(sys.modules) - modules:
        del sys.modules[name]


def describe(*paths: Path, code_class: str = "", code_args: str = "", **limits: Any) -> ModelRecord:
    request = IntakeRequest(
        paths=[str(p) for p in paths], code_class=code_class, code_args=code_args, unpack_dir=str(paths[0].parent)
    )
    return describe_files(request, limits=dataclasses.replace(IntakeLimits(), **limits))


def listed(source: str) -> dict[str, list[tuple[str, str, bool]]]:
    return {
        c.name: [(p.name, p.default, p.required) for p in c.params]
        for c in list_classes([CodeFile("m", "m.py", source)])
    }


# ---------------------------------------------------------------------------------------------- listing
def test_listing_finds_module_subclasses_by_their_bases_with_init_parameters_and_literal_defaults() -> None:
    source = """
import torch
import torch.nn as nn
from torch.nn import Module
from dataclasses import dataclass

class A(nn.Module):
    def __init__(self, n, /, size=(3, 4), *, name="a", act=torch.relu, **rest):
        super().__init__()

class B(torch.nn.Module):
    pass

class C(Module):
    def __init__(self, depth: int = 2):
        super().__init__()

class D(A):  # derives from a class found in the same code: inherits its parameters
    pass

class Config:  # not a module
    def __init__(self, x=1):
        pass

def factory():
    class Hidden(nn.Module):  # not at the top level
        pass
    return Hidden
"""
    classes = listed(source)
    assert list(classes) == ["A", "B", "C", "D"]
    assert classes["A"] == [("n", "", True), ("size", "[3, 4]", False), ("name", '"a"', False), ("act", "", False)]
    assert classes["B"] == [] and classes["C"] == [("depth", "2", False)] and classes["D"] == classes["A"]


def test_the_class_no_other_uses_is_marked_as_the_whole_model_and_its_json_prefilled() -> None:
    classes = {c.name: c for c in list_classes([CodeFile("net", "net.py", builders.NET_SOURCE)])}
    assert not classes["Block"].top and classes["Net"].top
    assert json.loads(default_args(classes["Net"])) == {"width": 8, "classes": 10, "dropout": 0.0}
    assert json.loads(default_args(classes["Block"])) == {"channels": None, "kernel": 3}  # null: to fill in


def test_a_syntax_error_is_told_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("import torch\n\nclass Net(torch.nn.Module:\n    pass\n")
    with pytest.raises(CodeError, match=r"'broken.py' has a syntax error at line 3"):
        module_classes(path)


def test_code_without_a_module_class_says_what_to_upload(tmp_path: Path) -> None:
    path = tmp_path / "helpers.py"
    path.write_text("def f():\n    return 1\n")
    with pytest.raises(CodeError, match=r"defines no nn\.Module subclass"):
        module_classes(path)


# ---------------------------------------------------------------------------------------------- intake
@pytest.fixture(scope="module")
def net_upload(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return builders.user_code_upload(tmp_path_factory.mktemp("net"), "tinynet_a", width=4)


def test_the_class_the_weights_fit_is_found_and_exports_to_onnx_that_matches_pytorch(
    net_upload: tuple[Path, Path], tmp_path: Path
) -> None:
    code, weights = net_upload
    record = describe(code, weights, code_args='{"width": 4}')
    assert record.format == "code" and record.is_pytorch and record.name == "Net"
    assert record.code is not None and (record.code.module, record.code.class_name) == ("tinynet_a", "Net")
    assert [(i.name, i.shape) for i in record.inputs] == [("x", None)]  # a shape the person gives, as TorchScript's
    assert "checkpoint's 'model_state_dict'" in " ".join(say(n) for n in record.notes)
    options = ExportOptions(input_shapes={"x": [1, 3, 16, 16]}, dynamic_axes={}, exporter="legacy")
    request = ExportRequest(source=source_of(record), options=options, out_dir=str(tmp_path), file_name="net.onnx")
    report = export_model(request)
    assert report.usable, [c.detail for c in report.checks if not c.ok]
    assert "from tinynet_a import Net as model_class" in report.code and '{"width": 4}' in report.code


def test_safetensors_weights_and_a_named_class_build_the_same_model_in_a_later_job(tmp_path: Path) -> None:
    code, weights = builders.user_code_upload(tmp_path, "tinynet_b", "w.safetensors", width=6, classes=3)
    record = describe(code, weights, code_class="Net", code_args='{"width": 6, "classes": 3}')
    assert record.parameter_count == sum(p.numel() for p in builders.user_net(width=6, classes=3).parameters())  # type: ignore[attr-defined]
    rebuilt = load_module(source_of(record))  # what export, benchmark and profile workers do
    x = torch.randn(2, 3, 8, 8)
    expected = builders.user_net(width=6, classes=3).eval()(x)  # type: ignore[operator]
    assert torch.allclose(rebuilt(x), expected)


def _zip(path: Path, members: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return path


BLOCK, _, NET = builders.NET_SOURCE.partition("class Net")
PACKAGE = {
    "__init__.py": "",
    "layers.py": BLOCK,
    "net.py": "import torch\nfrom torch import nn\nfrom .layers import Block\n\n\nclass Net" + NET,
}


@pytest.mark.parametrize("top", ["visionpkg/", ""], ids=["package-folder", "files-at-the-top"])
def test_a_zip_of_a_package_with_a_relative_import_is_built(tmp_path: Path, top: str) -> None:
    members: dict[str, str | bytes] = {top + name: text for name, text in PACKAGE.items()}
    members[f"__MACOSX/{top}._net.py"] = b"\x00\x05\x16\x07\xff"  # what a Mac's Finder adds: not code
    archive = _zip(tmp_path / "visionpkg.zip", members)
    weights = tmp_path / "w.pt"
    torch.save(builders.user_net().state_dict(), weights)  # type: ignore[attr-defined]
    record = describe(archive, weights)
    assert record.code is not None and record.code.module == "visionpkg.net" and record.architecture == "Net"
    x = torch.randn(1, 3, 8, 8)
    assert torch.allclose(load_module(source_of(record))(x), builders.user_net().eval()(x))  # type: ignore[operator]


# ---------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("args", "message"),
    [
        ('{"width": 4', r"not valid JSON \(line 1, column 12"),
        ("[4]", "must be a JSON object of name → value"),
        ('{"widht": 4}', r"do not fit Net: got an unexpected keyword argument 'widht'\. It takes: width, classes"),
        ('{"width": 5}', r"do not fit Net with these arguments: Net: 9 wrong shape \(block.bn.bias: file \[4\]"),
    ],
    ids=["not-json", "not-an-object", "wrong-name", "weights-do-not-fit"],
)
def test_arguments_that_do_not_fit_are_refused_saying_why(
    net_upload: tuple[Path, Path], args: str, message: str
) -> None:
    with pytest.raises(CodeError, match=message):
        describe(*net_upload, code_class="Net", code_args=args)


def test_a_constructor_that_raises_and_a_missing_module_are_told(tmp_path: Path) -> None:
    weights = tmp_path / "w.pt"
    torch.save(builders.user_net().state_dict(), weights)  # type: ignore[attr-defined]
    raising = tmp_path / "raising_net.py"
    raising.write_text(
        "from torch import nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        raise ValueError('needs a config file')\n"
    )
    with pytest.raises(CodeError, match=r"Net\(\) raised ValueError: needs a config file"):
        describe(raising, weights, code_class="Net")
    missing = tmp_path / "timm_net.py"
    missing.write_text("import timm_not_installed_here\nfrom torch import nn\nclass Net(nn.Module):\n    pass\n")
    with pytest.raises(CodeError, match="imports 'timm_not_installed_here', which this machine does not have"):
        describe(missing, weights)


def test_weights_that_fit_no_class_are_summarised(tmp_path: Path) -> None:
    code, _ = builders.user_code_upload(tmp_path, "tinynet_c")
    weights = tmp_path / "other.pt"
    torch.save({"encoder.weight": torch.zeros(2, 2)}, weights)
    with pytest.raises(
        CodeError,
        match=r"fit none of the code's classes .*Net: 11 missing \(block.bn.bias.*1 unexpected \(encoder.weight\)",
    ):
        describe(code, weights)


def test_hosted_mode_refuses_code_unless_the_operator_allows_it(net_upload: tuple[Path, Path]) -> None:
    with pytest.raises(UnsafeModelError, match="WORKBENCH_ALLOW_CODE_ARCHIVES=true"):
        describe(*net_upload, allow_code_archives=False)


def test_code_needs_exactly_one_weights_file(net_upload: tuple[Path, Path]) -> None:
    with pytest.raises(IntakeError, match="upload exactly one weights file"):
        describe(net_upload[0])


# ---------------------------------------------------------------------------------------------- CLI
def test_the_command_line_takes_the_code_and_weights_with_class_and_arguments(
    net_upload: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    model = ",".join(str(p) for p in net_upload)
    result = cli("info", model, "--class", "Net", "--args", '{"width": 4}', "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["code"]["class_name"] == "Net"
    refused = cli("info", model, "--args", '{"width": 7}')
    assert refused.returncode != 0 and "fit none of the code's classes" in refused.stderr


def test_reproduced_code_rebuilds_a_package_from_its_folder(tmp_path: Path) -> None:
    from core.model.records import UserCode
    from core.model.torchload import TorchSource

    code = UserCode(root=str(tmp_path / "pkg_unzipped"), module="pkg.net", class_name="Net", package="pkg")
    weights = tmp_path / "w.pt"
    torch.save({}, weights)
    text = reproduce_code(
        TorchSource(kind="code", name="Net", path=str(weights), code=code),
        ExportOptions(input_shapes={"x": [1, 3]}),
        "dynamo",
        "net.onnx",
    )
    assert "spec_from_file_location('pkg'" in text and "import_module('pkg.net').Net" in text
    compile(text, "export.py", "exec")


def test_a_kept_package_model_outlives_its_upload_and_rebuilds_from_the_library(tmp_path: Path) -> None:
    import shutil

    from core.model.library import ModelLibrary

    upload = tmp_path / "session" / "upload-1"
    upload.mkdir(parents=True)
    archive = _zip(upload / "keptpkg.zip", {"keptpkg/" + name: text for name, text in PACKAGE.items()})
    torch.save(builders.user_net().state_dict(), upload / "w.pt")  # type: ignore[attr-defined]
    record = describe(archive, upload / "w.pt")
    library = ModelLibrary(tmp_path / "models", max_age_s=3600)
    key = library.keep(record)
    shutil.rmtree(tmp_path / "session")  # the session's workspace is gone
    kept = library.open(record.id, key)
    assert kept is not None and kept.record.code is not None
    for name in [m for m in sys.modules if m.startswith("keptpkg")]:  # a later job is a fresh worker
        del sys.modules[name]
    x = torch.randn(1, 3, 8, 8)
    assert torch.allclose(load_module(source_of(kept.record))(x), builders.user_net().eval()(x))  # type: ignore[operator]


def test_a_model_built_from_code_is_not_sent_to_a_cluster_target(tmp_path: Path) -> None:
    from core.cli.common import in_own_folder
    from core.errors import TargetError
    from core.model.records import UserCode

    record = ModelRecord(
        id="x", name="Net", format="code", size_bytes=1, path=str(tmp_path / "w.pt"),
        code=UserCode(root=str(tmp_path / "net.py"), module="net", class_name="Net"),
    )  # fmt: skip
    with pytest.raises(TargetError, match="runs only on this machine"):
        in_own_folder(record, tmp_path, backend=object())  # type: ignore[arg-type]


def test_the_code_that_reproduces_an_export_runs_anywhere_with_torch_and_the_persons_files(
    net_upload: tuple[Path, Path], tmp_path: Path
) -> None:
    """It imported this app's own module (core.model.torch_files) and put the workspace's folder on sys.path: it
    now needs only torch and the person's model.py and weights beside it, and runs from any folder."""
    import shutil
    import subprocess

    code, weights = net_upload
    record = describe(code, weights, code_args='{"width": 4}')
    options = ExportOptions(input_shapes={"x": [1, 3, 16, 16]}, dynamic_axes={}, exporter="legacy")
    request = ExportRequest(source=source_of(record), options=options, out_dir=str(tmp_path), file_name="net.onnx")
    text = export_model(request).code
    assert "core." not in text and str(code.parent) not in text and "here / 'weights.pt'" in text
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for path in (code, weights):
        shutil.copy(path, elsewhere / path.name)
    (elsewhere / "export.py").write_text(text)
    done = subprocess.run(
        [sys.executable, str(elsewhere / "export.py")], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "net.onnx").is_file()  # written where it was run


def test_a_model_of_its_own_code_without_shapes_is_told_so_not_as_torchscript(
    net_upload: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    code, weights = net_upload
    done = cli("export", f"{code},{weights}", "--args", '{"width": 4}', "-o", str(tmp_path / "net.onnx"))
    assert done.returncode != 0 and "a model's own code says none" in done.stderr
    assert "TorchScript" not in done.stderr


def test_the_dims_a_models_first_layer_leaves_free_are_offered_as_dynamic(
    net_upload: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every axis of a .py + state_dict model started static (a U-Net exported at one size only): its first layer,
    a Conv2d, leaves the batch, the height and the width free, and those are offered as dynamic."""
    import onnx

    from core.export import default_options
    from core.model.notes import FIRST_LAYER

    code, weights = net_upload
    record = describe(code, weights, code_args='{"width": 4}')
    assert record.inputs[0].dynamic_axes == {"0": "batch", "2": "height", "3": "width"}
    said = [say(n) for n in record.notes if getattr(n, "key", "") == FIRST_LAYER]
    assert said == [
        "Its first layer, stem (Conv2d), leaves axes 0 (batch), 2 (height), 3 (width) of 'x' free: the Export page "
        "offers them as dynamic (untick any the rest of the model fixes)."
    ]
    given = dataclasses.replace(record.inputs[0], shape=[1, 3, 16, 16])
    options = default_options(dataclasses.replace(record, inputs=[given]))
    assert options.dynamic_axes == {"x": {"0": "batch", "2": "height", "3": "width"}}
    flat = dataclasses.replace(record.inputs[0], shape=[3, 16])  # a rank the offer does not fit: kept within it
    assert default_options(dataclasses.replace(record, inputs=[flat])).dynamic_axes == {"x": {"0": "batch"}}

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    out = tmp_path / "net.onnx"
    done = cli("export", f"{code},{weights}", "--args", '{"width": 4}', "--input", "x=1,3,16,16", "-o", str(out))
    assert done.returncode == 0, done.stderr
    dims = [d.dim_param or d.dim_value for d in onnx.load(str(out)).graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["batch", 3, "height", "width"]
