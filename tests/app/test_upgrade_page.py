"""An old model on the Partition page through AppTest: ONNX Runtime's refusal in the user's terms with the offer to
upgrade it, and after one click the page working on the new version, which the library keeps beside the original."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.identity import ANONYMOUS
from core.model.library import ModelLibrary
from core.notes import say
from core.upgrade.sentences import UPGRADED_FROM
from tests import builders
from tests.app.pages import open_page


def test_partition_offers_the_upgrade_and_works_on_the_new_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_START_SAMPLE", "")
    at = open_page("partition", ("old.onnx", builders.old_opset_model().SerializeToString()))
    (error,) = at.error
    assert "written in opset 6" in error.value and "Add\\-6" in error.value  # escaped Markdown
    assert "Could not find an implementation" not in error.value
    original = at.session_state["model"]
    go = next(b for b in at.button if b.key == f"upgrade_go_{original.id[:12]}")
    assert go.label == "Upgrade and continue"
    assert at.number_input(key=f"upgrade_opset_{original.id[:12]}").value == 18

    go.click().run()
    assert not at.exception and not at.error
    model = at.session_state["model"]
    assert (model.name, model.opset) == ("old (opset 18)", 18) and model.id != original.id
    assert model.notes[0].key == UPGRADED_FROM and model.notes[0].values["name"] == "old"  # kept as data
    assert say(model.notes[0]).startswith("Upgraded from old with onnx's version converter: opset 6 → 18")
    (success,) = at.success
    assert "upgraded from opset 6 to 18" in success.value and "match the original in onnx's reference" in success.value
    assert [s.value for s in at.subheader] == ["2 nodes in the main graph: 2 on CPU"]  # the page works on it
    changes = next(t.value for t in at.table if "what" in t.value.columns)  # in "What the upgrade changed"
    assert changes.set_index("op").loc["Add", "what"].startswith("version 6 → 14; attribute broadcast dropped")
    kept = ModelLibrary(tmp_path / "data" / "models", max_age_s=3600).entries(ANONYMOUS)[0]
    assert {e.kept.record.id for e in kept} == {original.id, model.id}  # both versions, in the library
