"""The house rules that keep core/ readable, checked on the source itself: small modules and functions, no
Streamlit in core, features that depend on libraries and never on each other, and typed jobs."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pytest

from core.jobs import JOBS
from core.jobs.registry import signature_of

CORE = Path(__file__).resolve().parents[2] / "core"
FEATURES = {"export", "decode", "bench", "quantize", "profile", "graph"}
LIBRARIES = {"model", "runtime"}
BASICS = {"access", "errors", "identity", "settings", "tables", "workspace"}
# what each part of core may import from core (besides itself)
ALLOWED = {
    **{feature: LIBRARIES | BASICS for feature in FEATURES},
    "model": BASICS,
    "runtime": {"model"} | BASICS,
    "jobs": {"runtime"} | BASICS,  # a cluster asks each target what it is made of (core.runtime.hardware)
    "store": {"bench", "jobs", "runtime"} | BASICS,
}


def _modules() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def _core_imports(path: Path) -> set[str]:
    """The second component of every core.X import in ``path`` (module level and inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names if node.module == "core"]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "core" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_no_core_module_is_over_500_lines() -> None:
    long = {str(p.relative_to(CORE)): n for p in _modules() if (n := len(p.read_text().splitlines())) > 500}
    assert not long


def test_no_core_function_is_over_80_lines() -> None:
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 80:
                    long.append(f"{path.relative_to(CORE)}:{node.name} ({length} lines)")
    assert not long


def test_core_never_imports_streamlit() -> None:
    for path in _modules():
        tree = ast.parse(path.read_text())
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert "streamlit" not in imported, path


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_features_depend_on_libraries_and_never_on_each_other(part: str) -> None:
    for path in sorted((CORE / part).rglob("*.py")):
        strays = _core_imports(path) - ALLOWED[part] - {part}
        assert not strays, f"{path.relative_to(CORE)} imports core.{', core.'.join(sorted(strays))}"


@pytest.mark.parametrize("name", JOBS.names())
def test_every_job_declares_the_types_of_its_arguments_and_result(name: str) -> None:
    signature = signature_of(JOBS.get(name).target)
    assert signature.result is not typing.Any, f"{name} does not say what it returns"
    untyped = [p for p, kind in signature.parameters.items() if kind is typing.Any]
    assert not untyped, f"{name} takes untyped arguments {untyped}"
