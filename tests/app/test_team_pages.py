"""History and the Dashboard for a signed-in team: only the team's runs, a run's permalink, regressions."""

from __future__ import annotations

import dataclasses
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from streamlit.testing.v1 import AppTest

from core.bench import BenchReport
from core.runtime.runs import BrowserRun, LatencyRun
from core.store import Store
from tests.app.pages import APP, texts
from tests.reports import made_report


def _slower(report: BenchReport, factor: float) -> BenchReport:
    for r in report.results:
        r.median_ms, r.median_low_ms, r.median_high_ms = (
            v * factor for v in (r.median_ms, r.median_low_ms, r.median_high_ms)
        )
    return report


def _seed() -> dict[str, BenchReport]:
    """Alice's two versions of a detector (the newer slower), Bob's classifier, Eve's run in another team."""
    store = Store(f"sqlite:///{Path(os.environ['WORKBENCH_DATA_DIR']) / 'history.sqlite'}")
    runs = {
        "old": made_report("a1", model="detector", when=datetime.now(UTC) - timedelta(days=7)),
        "new": _slower(made_report("a2", model="detector"), 1.5),
        "bob": made_report("b1", model="classifier", machine="box-b"),
        "eve": made_report("e1", model="secret-model"),
    }
    runs["new"].model_id = "cd" * 32  # a new export of the same PyTorch original (made_report records none)
    assert runs["eve"].activity is not None
    runs["eve"].activity.busy = True  # measured while other work kept the machine busy
    owners = {"old": "alice@acme.test", "new": "alice@acme.test", "bob": "bob@acme.test", "eve": "eve@other.test"}
    for name, report in runs.items():
        store.save(report, owner=owners[name], team=owners[name].split("@")[1])
    return runs


def _page(page: str, params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(params or {})
    at.run()
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, at.exception
    return at


def test_history_shows_the_teams_runs_and_opens_a_runs_permalink(as_person: dict[str, str]) -> None:
    runs = _seed()
    as_person["email"] = "alice@acme.test"
    at = _page("history")
    at.multiselect(key="history_models").set_value([]).run()
    table = at.dataframe[0].value
    assert set(table["run"]) == {"a1", "a2", "b1"} and set(table["by"]) == {"alice@acme.test", "bob@acme.test"}
    assert "secret-model" not in set(table["model"])  # another team's

    linked = AppTest.from_file(APP, default_timeout=120)
    linked.run()
    linked.query_params["run"] = "a1"
    linked.switch_page("app_pages/history.py").run()
    assert not linked.exception
    assert linked.multiselect(key="history_compare").value == ["a1"]  # the run, and none of its model before it
    assert linked.selectbox(key="history_open").value == "a1" and "by alice" in texts(linked)

    stranger = AppTest.from_file(APP, default_timeout=120)
    stranger.run()
    stranger.query_params["run"] = runs["eve"].id
    stranger.switch_page("app_pages/history.py").run()
    assert any("not your team's" in w.value for w in stranger.warning)


def test_the_dashboard_flags_a_slower_version_and_filters_by_person(as_person: dict[str, str]) -> None:
    _seed()
    as_person["email"] = "bob@acme.test"
    at = _page("dashboard")
    latest = at.dataframe[0].value
    assert list(latest["model"]) == ["classifier", "detector"] and list(latest["latest run"]) == ["b1", "a2"]
    assert latest["regressed"].iloc[1].startswith("⚠") and latest["regressed"].iloc[0] == ""
    flagged = "\n".join(w.value for w in at.warning)  # ORT's two rows; eager ran the same PyTorch module
    assert "2 regressions" in flagged and "PyTorch eager" not in flagged.split("\n\n", 1)[1]
    assert not any("busy" in c.value for c in at.caption)
    at.multiselect(key="dash_people").set_value(["bob@acme.test"]).run()
    assert list(at.dataframe[0].value["model"]) == ["classifier"]
    assert any("No regressions" in s.value for s in at.success)

    as_person["email"] = "eve@other.test"
    eve = _page("dashboard")
    assert list(eve.dataframe[0].value["model"]) == ["secret-model"]
    busy = "1 of these runs was measured while other processes kept the machine busy"
    assert any(busy in c.value for c in eve.caption)


def test_history_says_each_runs_kind_and_when_an_imported_one_came_in(as_person: dict[str, str]) -> None:
    _seed()
    store = Store(f"sqlite:///{Path(os.environ['WORKBENCH_DATA_DIR']) / 'history.sqlite'}")
    made = made_report("w1", model="detector", when=datetime(2026, 12, 1, 8, 0, tzinfo=UTC))
    shared = {f.name: getattr(made, f.name) for f in dataclasses.fields(LatencyRun) if f.name != "kind"}
    store.save(BrowserRun(**{**shared, "imported_at": "2026-12-03T09:30:00+00:00"}), owner="alice@acme.test",
               team="acme.test")  # fmt: skip
    as_person["email"] = "alice@acme.test"
    at = _page("history", {"run": "w1"})
    table = at.dataframe[0].value.set_index("run")
    assert (table.loc["w1", "kind"], table.loc["w1", "imported (UTC)"]) == ("browser", "2026-12-03 09:30")
    others = table.drop(index="w1")
    assert set(others["kind"]) == {"benchmark"} and set(others["imported (UTC)"]) == {""}
    (environment,) = [t.value for t in at.table]  # the opened run's machine and method: when it came in too
    assert environment.set_index("").loc["imported", "value"].replace("\\", "") == "2026-12-03 09:30 UTC"
