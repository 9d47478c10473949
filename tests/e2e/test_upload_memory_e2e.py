"""An upload at the configured size limit keeps the server's memory within the stated bound (docs/hosting.md):
the server grows by at most 3.5× the upload (measured: about 3×; the web server and Streamlit each hold a copy while
the request is parsed), plus 100 MB of slack for the page itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.upload_memory import measure

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def test_an_upload_at_the_limit_stays_within_the_memory_bound(tmp_path: Path) -> None:
    result = measure(60, tmp_path)  # a 60 MB model against a 61 MB limit
    assert result.upload_mb > 59
    assert result.growth_mb < 3.5 * result.upload_mb + 100, result
