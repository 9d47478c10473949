"""A model's own code is hostile until built in the worker: listing its classes never runs it, source too large or
too deep is refused quickly, and its archive, its module names and its exits cannot reach past the intake."""

from __future__ import annotations

import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from core.errors import CodeError, LimitExceededError, UnsafeModelError
from core.model.code_listing import MAX_SOURCE_BYTES, CodeFile, list_classes, module_classes
from core.model.intake import IntakeRequest, describe_files
from tests import builders


@pytest.fixture(autouse=True)
def imports_undone() -> Iterator[None]:
    path, modules = list(sys.path), set(sys.modules)
    yield
    sys.path[:] = path
    for name in set(sys.modules) - modules:
        del sys.modules[name]


def test_listing_the_classes_never_runs_the_code(tmp_path: Path) -> None:
    marks = [tmp_path / f"ran-{n}" for n in range(4)]
    source = f"""
import os
open({str(marks[0])!r}, "w")
from torch import nn

def touch(cls):
    open({str(marks[1])!r}, "w")
    return cls

class Meta(type):
    def __new__(mcs, *args):
        open({str(marks[2])!r}, "w")
        return super().__new__(mcs, *args)

@touch
class Net(nn.Module, metaclass=Meta):
    open({str(marks[3])!r}, "w")
    os.system("touch {tmp_path}/ran-system")

    def __init__(self, width=__import__("os").getpid()):
        super().__init__()
"""
    path = tmp_path / "net.py"
    path.write_text(source)
    (net,) = module_classes(path)
    assert net.name == "Net" and net.params[0].name == "width" and net.params[0].default == ""  # a call: not run
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("ran")]


def test_source_past_the_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "huge.py"
    path.write_text("# padding\n" * (MAX_SOURCE_BYTES // 10 + 1))
    started = time.perf_counter()
    with pytest.raises(LimitExceededError, match="MB of Python is read"):
        module_classes(path)
    assert time.perf_counter() - started < 1


@pytest.mark.parametrize(
    "source",
    [
        "x = " + "(" * 100_000 + ")" * 100_000,
        "x = " + "1+" * 200_000 + "1",
        "x = " + "lambda: " * 100_000 + "1",
        "".join("    " * i + "if x:\n" for i in range(200)) + "    " * 200 + "pass\n",
    ],
    ids=["parentheses", "additions", "lambdas", "blocks"],
)
def test_deeply_nested_source_is_refused_with_a_message_not_a_crash(source: str) -> None:
    started = time.perf_counter()
    with pytest.raises(CodeError, match=r"nests too deeply|syntax error|too many"):
        list_classes([CodeFile("deep", "deep.py", source)])
    assert time.perf_counter() - started < 5


def test_a_huge_literal_default_is_not_copied_into_the_arguments() -> None:
    source = (
        "from torch import nn\nclass Net(nn.Module):\n    def __init__(self, table="
        + repr("x" * 1_000_000)
        + "):\n        pass\n"
    )
    (net,) = list_classes([CodeFile("m", "m.py", source)])
    assert net.params[0].default == "" and not net.params[0].required


def _weights(folder: Path) -> Path:
    path = folder / "w.pt"
    torch.save(builders.user_net().state_dict(), path)  # type: ignore[attr-defined]
    return path


def test_a_package_zip_that_climbs_out_of_its_folder_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "pkg.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("pkg/__init__.py", "")
        zf.writestr("pkg/net.py", builders.NET_SOURCE)
        zf.writestr("../escaped.py", "print('out')")
    with pytest.raises(UnsafeModelError, match="a path outside the archive's folder"):
        describe_files(IntakeRequest(paths=[str(archive), str(_weights(tmp_path))], unpack_dir=str(tmp_path / "u")))
    assert not (tmp_path / "escaped.py").exists()


def test_a_module_named_like_one_the_app_uses_is_refused_not_shadowed(tmp_path: Path) -> None:
    code = tmp_path / "json.py"  # importing 'json' would give Python's own
    code.write_text(builders.NET_SOURCE)
    with pytest.raises(CodeError, match="'json' has the name of a module this app already has"):
        describe_files(IntakeRequest(paths=[str(code), str(_weights(tmp_path))]))


def test_code_that_exits_in_its_constructor_is_an_error_not_the_end_of_the_worker(tmp_path: Path) -> None:
    code = tmp_path / "quitter.py"
    code.write_text(
        "import sys\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        sys.exit(3)\n"
    )
    with pytest.raises(CodeError, match=r"Net\(\) raised SystemExit: 3"):
        describe_files(IntakeRequest(paths=[str(code), str(_weights(tmp_path))], code_class="Net"))
