"""The model library on the Model page: your kept models and your team's shared ones, each with its permalink;
open, and (those you kept) rename, tag, share or delete."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import streamlit as st

from core.bench import BenchReport
from core.errors import WorkbenchError
from core.i18n import _, ngettext, number
from core.jobs import BENCH
from core.model.library import Entry, owns
from core.model.records import FORMAT_LABELS, ModelRecord
from ui import language, session
from ui.jobs import show_error
from ui.text import human_bytes, md_escape

__all__ = ["library_section", "other_versions", "permalink", "version_label"]


def permalink(model_id: str, key: str) -> str:
    """The model's address, to bookmark or send: the app's own address with the model's id and key (and the
    language, when one was asked for)."""
    base = (st.context.url or "").split("?")[0].rstrip("/")
    for page in ("/export", "/decode", "/partition", "/benchmark", "/profile", "/quantize", "/history", "/model"):
        base = base.removesuffix(page)
    lang = language.param().get("lang")
    return f"{base}/?model={model_id}&key={key}" + (f"&lang={lang}" if lang else "")


def _latest(entry: Entry) -> str:
    """The latest benchmark headline kept with this keeping, if any."""
    from core.jobs.wire import WireError, decode
    from core.notes import say

    data = session.library().result(entry.kept.record.id, entry.kept.key, BENCH.name)
    if data is None:
        return ""
    try:
        return say(decode(data, BenchReport).headline)
    except WireError:
        return ""


def _when(epoch: float) -> str:
    seconds = time.time() - epoch
    if seconds < 3600:
        return _("{minutes} min ago").format(minutes=f"{max(seconds // 60, 1):.0f}")
    if seconds < 86400:
        return _("{hours} h ago").format(hours=f"{seconds // 3600:.0f}")
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%d")


def other_versions(record: ModelRecord) -> dict[str, Entry]:
    """The ONNX models of this person's library (and their team's shared ones) other than ``record``, by model
    id: what Compare may take as B. Those with ``record``'s name come first (its other versions: a re-export, a
    retrained model, the one a History run measured), then the rest, each newest first; bytes kept twice once."""
    mine, team = session.library().entries(session.who(), session.kept_keys())
    found: dict[str, Entry] = {}
    same = {record.name}  # its names: the file's, and what its keepings were renamed to
    for entry in (*mine, *team):
        kept = entry.kept.record
        if kept.id == record.id:
            same.add(entry.kept.label)
        elif kept.format == "onnx" and Path(kept.path).is_file():
            found.setdefault(kept.id, entry)

    def order(entry: Entry) -> tuple[bool, float]:
        return entry.kept.record.name not in same and entry.kept.label not in same, -entry.used_at

    ordered = sorted(found.values(), key=order)
    return {e.kept.record.id: e for e in ordered}


def version_label(entry: Entry) -> str:
    """One kept model in a list to choose from: its name, when it was last used, its size and its id's start
    (two versions of a model often share its name)."""
    kept = entry.kept
    return f"{kept.label} · {_when(entry.used_at)} · {human_bytes(kept.record.size_bytes)} · {kept.record.id[:8]}"


def _frame(entries: list[Entry], with_owner: bool) -> pd.DataFrame:
    rows = [
        {
            _("name"): e.kept.label,
            **({_("owner"): e.kept.owner} if with_owner else {}),
            _("format"): _(FORMAT_LABELS.get(e.kept.record.format, e.kept.record.format)),
            _("size"): human_bytes(e.kept.record.size_bytes),
            _("tags"): ", ".join(e.kept.tags),
            **({} if with_owner else {_("shared"): _("team") if e.kept.shared else ""}),
            _("last used"): _when(e.used_at),
            _("latest benchmark"): _latest(e),
        }
        for e in entries
    ]
    return pd.DataFrame(rows)


def _selected(entries: list[Entry], key: str, with_owner: bool, prompt: str) -> Entry | None:
    st.dataframe(_frame(entries, with_owner), hide_index=True, width="stretch")  # a data grid shows text as text
    by_key = {e.kept.key: e for e in entries}
    chosen = st.selectbox(
        prompt,
        list(by_key),
        index=None,
        format_func=lambda k: f"{by_key[k].kept.label} ({_when(by_key[k].used_at)})",
        key=key,
        placeholder=_("Choose a model"),
    )
    return by_key.get(chosen) if chosen is not None else None


def _open(entry: Entry) -> None:
    kept = entry.kept
    opened = session.library().open(kept.record.id, kept.key, session.who())
    if opened is None:
        st.warning(_("This model is not in the library any more."))
        return
    link = {"model": kept.record.id, "key": kept.key}
    session.set_current_model(opened.record, exported_from=opened.exported_from, link=link)


def _opened(entry: Entry) -> None:
    """A model this session opened by its link and did not keep: its permalink and Open, nothing to change."""
    kept = entry.kept
    st.markdown(f"**{md_escape(kept.label, 200)}**")
    st.caption(
        _(
            "Opened by its link: you may open it and send its link on; only whoever kept it can rename, tag or "
            "delete it."
        )
    )
    st.code(permalink(kept.record.id, kept.key), language=None)
    if st.button(_("Open"), type="primary", key=f"lib_open_{kept.key}"):
        _open(entry)


def _manage(entry: Entry) -> None:
    """What the owner may do with one of their models."""
    kept, who = entry.kept, session.who()
    library, token = session.library(), session.owner_token()
    st.markdown(f"**{md_escape(kept.label, 200)}**")
    st.caption(
        _("Its permalink, to bookmark or send (it opens for you and, once shared, your team)")
        if who.signed_in
        else _("Its permalink, to bookmark or send (it opens for you, and for whoever you send it to)")
    )
    st.code(permalink(kept.record.id, kept.key), language=None)
    left, right = st.columns(2)
    title = left.text_input(_("Name"), value=kept.label, max_chars=200, key=f"lib_title_{kept.key}")
    tags = right.text_input(
        _("Tags (comma-separated)"), value=", ".join(kept.tags), max_chars=400, key=f"lib_tags_{kept.key}"
    )
    shared = kept.shared
    if who.signed_in and not who.alone:  # a team of one has nobody to share with
        shared = st.toggle(
            _("Shared with my team ({team})").format(team=md_escape(who.team, 80)),
            value=kept.shared,
            key=f"lib_share_{kept.key}",
        )
    if kept.shared:
        st.caption(
            _("Shared: everyone in {team} can open it with its permalink.").format(team=md_escape(kept.team, 80))
        )
    open_col, save_col, delete_col = st.columns(3)
    if open_col.button(_("Open"), type="primary", key=f"lib_open_{kept.key}", width="stretch"):
        _open(entry)
    if save_col.button(_("Save changes"), key=f"lib_save_{kept.key}", width="stretch"):
        library.update(kept.record.id, kept.key, who, session=token, title=title, tags=tags.split(","), shared=shared)
        st.rerun()
    confirm = delete_col.checkbox(_("I want to delete it"), key=f"lib_confirm_{kept.key}")
    if delete_col.button(_("Delete"), key=f"lib_delete_{kept.key}", disabled=not confirm, width="stretch"):
        library.delete(kept.record.id, kept.key, who, token)
        if (st.session_state.get("link") or {}).get("key") == kept.key:
            st.session_state["link"] = {}  # the current model stays for this session, without its link
        st.toast(_("Deleted {name} from the library.").format(name=md_escape(kept.label, 80)))
        st.rerun()


def library_section() -> None:
    """Your models and your team's shared ones."""
    who, token = session.who(), session.owner_token()
    config = session.settings()
    mine, team = session.library().entries(who, session.kept_keys())
    if not mine and not team:
        st.caption(
            _(
                "Nothing in this session's library yet. Every model you upload, export or quantize is kept here by "
                "its content, with a permalink that opens it again."
            )
            if token is not None and not who.signed_in
            else _(
                "Nothing in your library yet. Every model you upload, export or quantize is kept here by its "
                "content, with a permalink that opens it again."
            )
        )
        return
    quota = config.library_quota_mb << 20
    models = ngettext("{count} model", "{count} models", len(mine)).format(count=number(len(mine)))
    if quota and not who.signed_in and token is not None:  # an anonymous session of a shared instance: its share
        held = _("{models}, {used} of this session's {share} on the server.").format(
            models=models,
            used=human_bytes(session.library().session_usage(token)),
            share=human_bytes(int(quota * config.library_session_share)),
        )
    else:
        held = (
            _("{models}, {used} of {quota} on the server.")
            if quota and who.signed_in
            else _("{models}, {used} on the server.")
        ).format(
            models=models, used=human_bytes(session.library().usage(who, session.kept_keys())), quota=human_bytes(quota)
        )
    st.caption(_("{held} {retention}").format(held=held, retention=_retention(who.signed_in)))
    try:
        if mine:
            chosen = _selected(mine, "library_mine", False, _("Open, rename, tag, share or delete"))
            if chosen is not None and owns(chosen.kept, who, token):
                _manage(chosen)
            elif chosen is not None:  # opened by its link: the key opens, it never owns
                _opened(chosen)
        if team:
            st.markdown("##### " + _("Shared by your team ({team})").format(team=md_escape(who.team, 80)))
            chosen = _selected(team, "library_team", True, _("Open one of your team's models"))
            if chosen is not None:
                st.code(permalink(chosen.kept.record.id, chosen.kept.key), language=None)
                if st.button(_("Open"), type="primary", key=f"lib_open_team_{chosen.kept.key}"):
                    _open(chosen)
    except WorkbenchError as exc:
        show_error(exc)


def _retention(signed_in: bool) -> str:
    config = session.settings()
    hours = config.library_max_age_h if signed_in else config.workspace_max_age_h
    if hours >= 48:
        return _("A model unused for {days} days is forgotten.").format(days=number(hours / 24))
    return _("A model unused for {hours} hours is forgotten.").format(hours=number(hours))
