"""What comes back from a job's folders (core.jobs.outputs): plain files and folders, never a link or a pipe."""

from __future__ import annotations

import os
import time
from pathlib import Path

from core.jobs.outputs import drop_links, dropped_warning


def test_links_to_files_and_folders_and_pipes_are_dropped_at_any_depth(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"plain")
    (tmp_path / "deep" / "deeper").mkdir(parents=True)
    (tmp_path / "deep" / "deeper" / "data.bin").write_bytes(b"plain")
    os.symlink("/etc/passwd", tmp_path / "secret.onnx")
    os.symlink("/etc", tmp_path / "deep" / "etc")
    os.symlink("model.onnx", tmp_path / "deep" / "deeper" / "same.onnx")  # even one that stays inside
    os.mkfifo(tmp_path / "pipe")
    assert sorted(drop_links(tmp_path)) == ["deep/deeper/same.onnx", "deep/etc", "pipe", "secret.onnx"]
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert left == ["deep", "deep/deeper", "deep/deeper/data.bin", "model.onnx"]


def test_only_what_was_made_since_the_job_started_is_dropped(tmp_path: Path) -> None:
    """A command line's output folder is the user's: links they had there before the job are theirs."""
    os.symlink("/etc", tmp_path / "theirs")
    started = (tmp_path / "theirs").lstat().st_ctime + 1e-6  # the job starts just after
    time.sleep(0.02)  # past the kernel's clock tick, which stamps what the job makes
    os.symlink("/etc", tmp_path / "the-jobs")
    assert drop_links(tmp_path, since=started) == ["the-jobs"]
    assert os.path.lexists(tmp_path / "theirs")


def test_the_warning_names_what_was_dropped_and_counts_the_rest() -> None:
    message = dropped_warning("export.run", [f"link{i}" for i in range(7)])
    assert "'export.run' left 7 link(s)" in message and "link4 and 2 more" in message and "link5" not in message
