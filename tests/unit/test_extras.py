"""The local app needs none of the team's or the cluster's extras (requirements-team.txt,
requirements-cluster.txt); a setting that needs one it lacks is refused with the way to install it."""

from __future__ import annotations

import subprocess
import sys

from tests.cli import PROJECT_ROOT

# A fresh interpreter in which the extras cannot be imported, as after `make run` alone (None in sys.modules makes
# `import ray` fail and importlib.util.find_spec answer None)
_WITHOUT_EXTRAS = """
import sys
for name in ("ray", "psycopg", "authlib"):
    sys.modules[name] = None
from streamlit.testing.v1 import AppTest
from core.errors import MissingExtraError

at = AppTest.from_file("streamlit_app.py", default_timeout=120)
at.run()
assert not at.exception, at.exception
print("start page:", at.session_state["model"].name)
for page in ("decode", "history"):
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, (page, at.exception)
print("pages: fine")

from core.store import Store
try:
    Store("postgresql+psycopg://someone@127.0.0.1:1/history")
except MissingExtraError as exc:
    print("postgres:", exc)
from core.jobs.cluster.client import connect
try:
    connect("127.0.0.1:1")
except MissingExtraError as exc:
    print("cluster:", exc)
"""


def test_the_local_app_runs_without_the_extras_and_a_setting_that_needs_one_says_how_to_install_it(
    tmp_path,  # type: ignore[no-untyped-def]
) -> None:
    env = {"PATH": "/usr/bin:/bin", "WORKBENCH_DATA_DIR": str(tmp_path / "data"), "WORKBENCH_WARM_WORKERS": "0"}
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_EXTRAS], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    assert lines["start page"] == "tinycnn" and lines["pages"] == "fine"
    assert "needs the team extras (psycopg)" in lines["postgres"] and "`make team`" in lines["postgres"]
    assert "needs the cluster extras (ray)" in lines["cluster"] and "`make cluster-extras`" in lines["cluster"]
    assert "requirements-cluster.txt" in lines["cluster"]
