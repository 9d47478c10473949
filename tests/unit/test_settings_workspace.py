"""Settings come from defaults, the mode, secrets.toml and the environment; workspaces clean up after themselves."""

from __future__ import annotations

import gc
import os
import tempfile
import time
from pathlib import Path

import pytest

from core.settings import load_settings
from core.workspace import Workspace, safe_filename, sweep_closed_sessions, sweep_workspaces


def test_local_mode_is_the_default_and_allows_code_archives(tmp_path: Path) -> None:
    settings = load_settings(environ={}, secrets_path=tmp_path / "none.toml")
    assert settings.mode == "local" and not settings.hosted and settings.allow_code_archives


def test_the_data_folder_is_the_users_own_unless_named_and_never_the_real_one_in_a_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not <temp dir>/onnx-workbench, which every checkout on the machine shared and a reboot emptied."""
    none = tmp_path / "none.toml"
    default = load_settings(environ={}, secrets_path=none).data_dir
    assert default == str(Path(os.environ["XDG_DATA_HOME"]) / "onnx-workbench")  # this test run's (tests/conftest.py)
    assert not Path(default).is_relative_to(Path.home())
    assert default != str(Path(tempfile.gettempdir(), "onnx-workbench"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    assert load_settings(environ={}, secrets_path=none).data_dir == str(tmp_path / "share" / "onnx-workbench")
    shared = {"WORKBENCH_DATA_DIR": str(tmp_path / "team")}  # one folder for several instances, on purpose
    assert load_settings(environ=shared, secrets_path=none).data_dir == str(tmp_path / "team")


def test_hosted_mode_tightens_limits_and_refuses_code_archives(tmp_path: Path) -> None:
    local = load_settings(environ={}, secrets_path=tmp_path / "none.toml")
    hosted = load_settings(environ={"WORKBENCH_MODE": "hosted"}, secrets_path=tmp_path / "none.toml")
    assert hosted.hosted and not hosted.allow_code_archives
    assert hosted.max_upload_mb < local.max_upload_mb
    assert hosted.worker_memory_mb < local.worker_memory_mb


def test_operator_can_turn_code_archives_back_on_in_hosted_mode(tmp_path: Path) -> None:
    settings = load_settings(
        environ={"WORKBENCH_MODE": "hosted", "WORKBENCH_ALLOW_CODE_ARCHIVES": "true"},
        secrets_path=tmp_path / "none.toml",
    )
    assert settings.allow_code_archives


def test_environment_wins_over_secrets_toml(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets.toml"
    secrets.write_text("[workbench]\nmax_nodes = 1234\nworker_timeout_s = 9\n")
    settings = load_settings(environ={"WORKBENCH_WORKER_TIMEOUT_S": "3.5"}, secrets_path=secrets)
    assert settings.max_nodes == 1234 and settings.worker_timeout_s == 3.5


def test_bad_values_name_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_nodes='lots'"):
        load_settings(environ={"WORKBENCH_MAX_NODES": "lots"}, secrets_path=tmp_path / "x")
    with pytest.raises(ValueError, match="'local' or 'hosted'"):
        load_settings(environ={"WORKBENCH_MODE": "public"}, secrets_path=tmp_path / "x")


def test_a_start_sample_that_is_no_sample_is_refused_naming_the_samples_there_are() -> None:
    from core.model.zoo import check_start_sample

    with pytest.raises(ValueError, match=r"start_sample='resnet9000': expected one of tinycnn, .* or ''"):
        check_start_sample("resnet9000")
    check_start_sample("")  # no start sample
    check_start_sample("mlp")


def test_workspace_is_removed_when_the_session_object_goes(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    folder = ws.new_folder("upload")
    (folder / "model.onnx").write_bytes(b"x")
    path = ws.path
    del ws
    gc.collect()
    assert not path.exists()


def test_a_sessions_earlier_workspace_object_never_deletes_the_folder_a_later_one_shows(tmp_path: Path) -> None:
    """Two objects for one session's folder (a session whose state was dropped, or two AppTests, which share one
    session id): the one collected first used to delete the files the other's results name."""
    earlier = Workspace.open(tmp_path, "session")
    later = Workspace.open(tmp_path, "session")
    results = later.new_folder("decode")
    del earlier
    gc.collect()
    assert results.is_dir()
    del later
    gc.collect()
    assert not results.exists()  # the last one gone, the folder goes with it


def test_sweep_removes_only_old_workspaces(tmp_path: Path) -> None:
    old, fresh = Workspace(tmp_path), Workspace(tmp_path)
    past = time.time() - 7200
    os.utime(old.path / ".last-used", (past, past))
    removed = sweep_workspaces(tmp_path, max_age_s=3600)
    assert removed == [old.path]
    assert fresh.path.exists() and not old.path.exists()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("model.onnx", "model.onnx"),
        ("../../etc/passwd", "passwd"),
        ("C:\\x\\y.pt", "y.pt"),
        ("..", "upload"),
        ("<script>.onnx", "script_.onnx"),
        ("方向分类.onnx", "方向分类.onnx"),
        ("my model (v2).onnx", "my_model_v2_.onnx"),
        ("a\u202egnp.onnx", "a_gnp.onnx"),  # a right-to-left override
        ("长" * 60 + ".onnx", "长" * 38 + ".onnx"),  # 119 bytes of UTF-8: well inside a file system's 255
    ],
)
def test_uploaded_names_become_plain_file_names(name: str, expected: str) -> None:
    assert safe_filename(name) == expected


def test_closed_sessions_lose_their_workspace_after_the_grace_period(tmp_path: Path) -> None:
    alive, gone, foreign = (
        Workspace(tmp_path, "alive", "me"),
        Workspace(tmp_path, "gone", "me"),
        Workspace(tmp_path, "foreign", "another-server"),
    )
    state: dict[str, float] = {}

    def active(session_id: str) -> bool:
        return session_id == "alive"

    assert sweep_closed_sessions(tmp_path, "me", active, grace_s=10, inactive_since=state, now=100.0) == []
    assert sweep_closed_sessions(tmp_path, "me", active, grace_s=10, inactive_since=state, now=111.0) == [gone.path]
    assert alive.path.exists() and foreign.path.exists() and not gone.path.exists()


def test_a_session_that_reconnects_within_the_grace_keeps_its_files(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, "flaky", "me")
    state: dict[str, float] = {}
    sweep_closed_sessions(tmp_path, "me", lambda _: False, 10, state, now=0.0)
    sweep_closed_sessions(tmp_path, "me", lambda _: True, 10, state, now=5.0)  # reconnected
    assert sweep_closed_sessions(tmp_path, "me", lambda _: False, 10, state, now=12.0) == []
    assert ws.path.exists()


def test_a_download_reads_only_a_plain_file_inside_the_workspace(tmp_path: Path) -> None:
    """A result names the files its worker wrote, and the worker read an untrusted model: a download reads
    only a plain file in this session's folder, never a link it left or a path it named elsewhere."""
    from core.errors import ResultFileError

    ws = Workspace(tmp_path / "ws")
    out = ws.new_folder("export")
    (out / "model.onnx").write_bytes(b"onnx")
    assert ws.read_file(out / "model.onnx") == b"onnx"
    secret = tmp_path / "secrets.toml"
    secret.write_text("password")
    (out / "planted.onnx").symlink_to(secret)
    (out / "inside-link.onnx").symlink_to(out / "model.onnx")
    for named in (secret, out / "planted.onnx", out / "inside-link.onnx", out, out / "missing.onnx"):
        with pytest.raises(ResultFileError):
            ws.read_file(named)
