"""In Chromium, a team on a hosted instance: Alice exports and benchmarks a model and shares it from her library;
Bob, her teammate, opens its permalink and benchmarks it too; both runs are on History and the Dashboard; Eve,
of another team, gets neither the model nor the runs."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from core.store import Store
from tests.e2e.conftest import go_to, shot, wait_idle
from tests.reports import made_report

pytestmark = [pytest.mark.e2e]

VIEWPORT = {"width": 1400, "height": 1000}


def _benchmark(page) -> None:  # type: ignore[no-untyped-def]
    go_to(page, "Benchmark")
    export = page.get_by_role("button", name="Export with the defaults and continue")
    if export.count():
        export.click()
    page.get_by_role("button", name="Run the benchmark").wait_for(timeout=120_000)
    wait_idle(page)
    page.get_by_label("Measured calls per configuration").fill("10")  # who sees whose runs, not how fast
    page.get_by_label("Warm-up calls", exact=True).fill("2")
    page.get_by_role("button", name="Run the benchmark").click()
    page.get_by_role("link", name=re.compile("Saved to the history as run")).wait_for(timeout=180_000)
    wait_idle(page)


def _seed_versions(signed_in_app) -> None:  # type: ignore[no-untyped-def]
    """Two versions of a detector from Bob's pipeline, the newer one surely slower: a regression to flag."""
    store = Store(f"sqlite:///{signed_in_app.data_dir / 'history.sqlite'}")
    week_ago = datetime.now(UTC) - timedelta(days=7)
    older, newer = made_report(model="detector", when=week_ago), made_report(model="detector")
    newer.model_id = "cd" * 32
    for result in newer.results:
        result.median_ms, result.median_low_ms, result.median_high_ms = (
            v * 1.5 for v in (result.median_ms, result.median_low_ms, result.median_high_ms)
        )
    for report in (older, newer):
        store.save(report, owner="bob@acme.test", team="acme.test")


def test_a_team_shares_a_model_and_sees_each_others_runs(browser, signed_in_app) -> None:  # type: ignore[no-untyped-def]
    contexts = [browser.new_context(viewport=VIEWPORT) for _ in range(3)]
    alice, bob, eve = (c.new_page() for c in contexts)
    try:
        alice.goto(signed_in_app.url)
        wait_idle(alice)
        signed_in_app.sign_in(alice, "alice@acme.test", "Alice")
        _benchmark(alice)  # the start sample, exported in one click (kept in her library), then measured
        alice.reload()  # nothing lost: the same model, and its benchmark shown at once
        wait_idle(alice)
        alice.get_by_role("link", name=re.compile("Saved to the history as run")).wait_for(timeout=60_000)
        assert "model=" in alice.url and alice.get_by_text("Signed in as Alice").is_visible()
        go_to(alice, "Model")
        alice.get_by_role("tab", name="Library").click()
        alice.locator('[data-testid="stSelectbox"]').filter(has_text="Open, rename").click()
        alice.get_by_role("option").first.click()
        wait_idle(alice)
        alice.get_by_text("Shared with my team (acme.test)").click()
        alice.get_by_role("button", name="Save changes").click()
        wait_idle(alice)
        alice.get_by_text("Shared: everyone in acme.test can open it with its permalink.").wait_for()
        permalink = alice.locator('[data-testid="stCode"]').first.inner_text().strip()
        assert re.search(r"\?model=[0-9a-f]{64}&key=", permalink)
        shot(alice, "95-library-shared")

        bob.goto(permalink)  # before signing in: the link is followed once he has
        wait_idle(bob)
        signed_in_app.sign_in(bob, "bob@acme.test", "Bob")
        bob.wait_for_url(re.compile(re.escape(permalink.split("?")[1])), timeout=60_000)
        wait_idle(bob)
        bob.get_by_test_id("stSidebar").get_by_text("Signed in as Bob").wait_for()
        assert "sample=" not in bob.url  # Alice's export is his current model, not the start sample
        _benchmark(bob)
        _seed_versions(signed_in_app)

        go_to(bob, "History")
        bob.get_by_text("Runs to compare").wait_for()
        for person in ("alice@acme.test", "bob@acme.test"):  # both runs, compared by default
            assert bob.get_by_text(re.compile(f"· {person} ·")).count() >= 1
        shot(bob, "96-history-two-people")
        go_to(bob, "Dashboard")
        bob.get_by_role("heading", name="Latest per model and machine").wait_for()
        shot(bob, "97-dashboard")
        assert bob.get_by_text("2 regressions").is_visible()  # the detector's new export, both ORT configurations
        assert bob.get_by_text(re.compile(r"detector: ORT ALL on box-a: 1 → 1.5 ms \(1.50×\)")).is_visible()
        assert bob.locator('[data-testid="stPlotlyChart"]').count() >= 1

        eve.goto(signed_in_app.url)
        wait_idle(eve)
        signed_in_app.sign_in(eve, "eve@other.test", "Eve")
        eve.goto(permalink)
        wait_idle(eve)
        eve.get_by_text("not shared with you").wait_for()
        assert "?sample=tinycnn" in eve.url  # the start sample instead
        go_to(eve, "Dashboard")
        eve.get_by_text("No benchmark runs yet").wait_for()
        shot(eve, "98-stranger-dashboard")
    finally:
        for context in contexts:
            context.close()
