"""A run's two downloads side by side: its table (or its configuration) and the whole run as JSON, each made only
when clicked (a large run's JSON is megabytes: it is not built on every rerun of the page)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import streamlit as st

__all__ = ["Download", "csv_of", "side_by_side"]


@dataclass(frozen=True, kw_only=True)
class Download:
    """One button: its label, the bytes (or a function that makes them when clicked), the file's name and type."""

    label: str
    data: str | bytes | Callable[[], str | bytes]
    file_name: str
    mime: str = "application/json"
    key: str = ""


def csv_of(frame: pd.DataFrame) -> Callable[[], bytes]:
    """The frame as CSV bytes, made when the button is clicked."""
    return lambda: frame.to_csv(index=False).encode()


def side_by_side(left: Download, right: Download) -> None:
    """Two download buttons in two columns; a click reruns nothing (``on_click="ignore"``)."""
    for column, button in zip(st.columns(2), (left, right), strict=True):
        column.download_button(
            button.label, button.data, button.file_name, button.mime, key=button.key or None, on_click="ignore"
        )
