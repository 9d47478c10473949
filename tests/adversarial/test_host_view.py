"""What a worker sees of the host. A code archive looks at every place a thief would (the shadow passwords, root's
home and Streamlit's secrets there, other homes, /var, /srv, /opt, the project's history and secrets, another
session's files): in the sandbox, fresh or pre-started, it sees none of them, only the way to the Python
installation; without the sandbox it sees them all. The links it leaves among its results are dropped, and the
job's handle says so."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest

from core.errors import WorkbenchError
from core.jobs import INTAKE, ProcessBackend, submit
from core.jobs import view as host
from core.jobs.sandbox import sandbox_status
from core.model.intake import IntakeRequest
from core.settings import PROJECT_ROOT, load_settings
from tests.adversarial.payloads import clean_pt2, observe, probe_code, pt2_with_code

pytestmark = pytest.mark.skipif(not sandbox_status()[0], reason=f"no sandbox here: {sandbox_status()[1]}")

HOME = Path.home()
SYSTEM = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev", "proc", "tmp"}
PLACES = ["/", "/etc", "/etc/shadow", "/root", str(HOME), str(HOME / ".streamlit"), "/home", "/var", "/srv", "/opt",
          "/mnt", "/sys", str(PROJECT_ROOT / ".git"), str(PROJECT_ROOT / ".streamlit")]  # fmt: skip
LINKS = {"shadow.onnx", "etc", "pipe", "sub/model.onnx"}  # what the archive leaves among its results


@dataclasses.dataclass
class Probe:
    seen: dict[str, str | list[str]]  # place -> what the archive saw there
    made: dict[str, str]  # what it tried to leave among its results -> "made" or the error's name
    left: set[str]  # what its results folder holds after the job
    warnings: tuple[str, ...]
    other_session: str


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return clean_pt2(tmp_path_factory.mktemp("pt2"))


def _on_the_way(place: str) -> set[str]:
    """The names a sandboxed worker may see in ``place``: the next step toward the Python installation (pyenv's
    lies in root's home) or the project."""
    folders, links = host.python_installation()
    shown = [*folders, *(link for link, _ in links), PROJECT_ROOT]
    return {p.relative_to(place).parts[0] for p in shown if p.is_relative_to(place) and p != Path(place)}


def _probe(tmp_path: Path, clean: Path, sandbox: bool, warm: bool) -> Probe:
    data = tmp_path / "data"
    other = data / "workspaces" / "someone-else" / "upload-1"
    other.mkdir(parents=True)
    (other / "their-model.onnx").write_bytes(b"theirs")
    out = data / "workspaces" / "me" / "unpack-3"
    out.mkdir(parents=True)
    archive = data / "workspaces" / "me" / "upload-2" / "model.pt2"
    places = [*PLACES, str(other)]
    pt2_with_code(clean, archive, probe_code(places, out, archive))
    settings = dataclasses.replace(load_settings(environ={}), data_dir=str(data), sandbox=sandbox)
    backend = ProcessBackend(settings, warm=1 if warm else 0)
    try:
        deadline = time.monotonic() + 120
        while warm and backend.pool is not None and backend.pool.ready_count() == 0:
            assert time.monotonic() < deadline, "no worker got ready"
            time.sleep(0.05)
        handle = submit(INTAKE, IntakeRequest(paths=[str(archive)], unpack_dir=str(out)), backend)
        with pytest.raises(WorkbenchError):  # the archive's code fails the load on purpose, once it has looked
            handle.result(timeout=180)
        assert handle.handle.started_warm is warm  # type: ignore[attr-defined]
    finally:
        if backend.pool is not None:
            backend.pool.close()
    report = json.loads((out / "seen.json").read_text())
    left = {str(p.relative_to(out)) for p in out.rglob("*")}
    return Probe(report["seen"], report["made"], left, handle.warnings, str(other))


def _assert_links_dropped_and_named(probe: Probe) -> None:
    assert {probe.made[name] for name in LINKS} == {"made"}  # it could leave them...
    hard = {name for name in ("archive", "python") if probe.made[name] == "made"}
    assert probe.left == {"seen.json", "sub", *hard}  # ...and none is left to be read or moved
    assert len(probe.warnings) == 1 and "left 4 link(s)" in probe.warnings[0]
    assert all(name in probe.warnings[0] for name in LINKS)


@pytest.mark.parametrize("warm", [False, True], ids=["fresh", "pre-started"])
def test_a_code_archive_sees_nothing_of_the_host_but_what_python_needs(tmp_path: Path, clean: Path, warm: bool) -> None:
    probe = _probe(tmp_path, clean, sandbox=True, warm=warm)
    seen = probe.seen
    assert seen["/etc/shadow"] == "error:ENOENT" and set(seen["/etc"]) <= set(host.ETC_FILES)
    assert set(seen["/"]) <= SYSTEM | _on_the_way("/"), seen["/"]
    for place in ("/root", str(HOME), str(HOME / ".streamlit"), "/home", "/var", "/srv", "/opt", "/mnt", "/sys"):
        way = _on_the_way(place)  # pyenv's Python lies in root's home: only the folders down to it are seen
        assert (set(seen[place]) <= way) if way else seen[place] == "error:ENOENT", (place, seen[place])
    for hidden in (str(PROJECT_ROOT / ".git"), str(PROJECT_ROOT / ".streamlit")):  # empty, or nothing to read
        assert seen[hidden] in ([], "") or str(seen[hidden]).startswith("error:"), (hidden, seen[hidden])
    assert seen[probe.other_session] == "error:ENOENT"
    # a hard link to a file outside its folders cannot be made: each folder shown is a mount of its own
    assert probe.made["archive"] == probe.made["python"] == "EXDEV"
    _assert_links_dropped_and_named(probe)


@pytest.mark.parametrize("warm", [False, True], ids=["fresh", "pre-started"])
def test_without_the_sandbox_the_same_archive_sees_the_host(tmp_path: Path, clean: Path, warm: bool) -> None:
    """What the sandbox hides: the test above would fail without it. Links are dropped all the same."""
    probe = _probe(tmp_path, clean, sandbox=False, warm=warm)
    for place in ("/", "/etc", "/etc/shadow", probe.other_session):
        assert probe.seen[place] == observe(place), place
    assert set(probe.seen["/etc"]) > set(host.ETC_FILES) and "their-model.onnx" in probe.seen[probe.other_session]
    beyond = set(observe(str(HOME))) - _on_the_way(str(HOME))  # the home folder, beyond the way to Python
    assert not beyond or set(probe.seen[str(HOME)]) & beyond
    _assert_links_dropped_and_named(probe)
