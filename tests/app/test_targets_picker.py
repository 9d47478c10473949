"""The sidebar's "Run on" through AppTest, without a cluster to reach: none without cluster_address, and with one
that cannot be reached, a warning that jobs run here, and a page that runs here all the same. (With a real
two-node cluster, in Chromium: tests/cluster/test_cluster.py.)"""

from __future__ import annotations

import pytest

from tests import builders
from tests.app.pages import open_page


def test_no_cluster_no_picker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_CLUSTER_ADDRESS", "")
    at = open_page()
    assert not [s for s in at.sidebar.selectbox if s.label == "Run on"]
    assert not any("Ray cluster" in w.value for w in at.sidebar.warning)


def test_a_cluster_that_cannot_be_reached_leaves_every_job_here_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WORKBENCH_CLUSTER_ADDRESS", "127.0.0.1:1")
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page("partition", ("relu.onnx", builders.relu_model().SerializeToString()))  # a job a target would take
    (warning,) = [w.value.replace("\\", "") for w in at.sidebar.warning if "Ray cluster" in w.value]  # escaped
    assert "127.0.0.1:1 cannot be reached" in warning and "Jobs run on this server." in warning
    assert not [s for s in at.sidebar.selectbox if s.label == "Run on"]
    assert not at.error, [e.value for e in at.error]
    assert next(s.value for s in at.subheader) == "1 node in the main graph: 1 on CPU"


class _Joined:
    """What connect gives for a cluster joined with cluster_insecure (no token authentication), with no targets."""

    address = "10.0.0.9:6379"
    insecure = True

    def targets(self, hardware: bool = True, wait_s: float = 0) -> list[object]:
        return []


def test_a_cluster_used_without_authentication_says_so_in_the_sidebar(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_CLUSTER_ADDRESS", _Joined.address)
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    monkeypatch.setattr("ui.targets.connect", lambda address: _Joined())
    at = open_page()
    (warning,) = [w.value.replace("\\", "") for w in at.sidebar.warning if "authentication" in w.value]
    assert "10.0.0.9:6379 is used without token authentication" in warning and "cluster_insecure" in warning
    assert [s.options for s in at.sidebar.selectbox if s.label == "Run on"] == [["this server"]]
