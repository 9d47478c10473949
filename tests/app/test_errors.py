"""One way of showing an error: its first line escaped, a traceback or log that comes with it as code."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _page() -> None:
    from core.errors import JobFailed
    from ui.jobs import show_error

    show_error(
        JobFailed(
            "The job 'export.run' failed: RuntimeError: __torch__.Model has no **forward**\n"
            'Traceback (most recent call last):\n  File "__torch__/model.py", line 1\n    __init__ = <a href=x>',
            "worker stderr tail",
        )
    )


def test_a_traceback_is_shown_as_code_never_as_markdown() -> None:
    at = AppTest.from_function(_page).run()
    assert not at.exception
    (error,) = at.error
    assert error.value.startswith(r"The job 'export\.run' failed\: RuntimeError\: \_\_torch\_\_\.Model has no \*\*")
    assert "Traceback" not in error.value
    (code,) = at.code
    assert code.value.startswith('Traceback (most recent call last):\n  File "__torch__/model.py", line 1')
    assert "<a href=x>" in code.value and code.value.endswith("worker stderr tail")
