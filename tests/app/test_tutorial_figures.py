"""The tutorial's figures beside the user's (ui/tutorial_view.py): on the tinycnn sample's card the printed
parameter count beside the counted one, and after its export the largest difference beside the tutorial's."""

from __future__ import annotations

import pytest

from tests.app.pages import open_page, texts


def test_the_samples_card_and_its_export_show_the_tutorials_figures_beside_the_users() -> None:
    at = open_page()  # the Model page, with the start sample: the tutorial's small CNN
    shown = texts(at)
    assert "The tutorial printed 87,114 parameters" in shown
    assert any("250,890" in m.value and "32·16·16" in m.value for m in at.markdown)  # why, in the expander

    at.switch_page("app_pages/export.py").run()
    at.button(key="export_button").click().run()
    assert not at.exception, at.exception
    assert "The tutorial measured 1.45e-07" in texts(at)


def test_another_model_gets_no_parameter_figure_of_the_tutorials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "mlp")
    assert "87,114" not in texts(open_page())
