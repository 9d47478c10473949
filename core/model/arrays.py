"""An uploaded .npz of arrays, checked before anything is loaded: its listing and each array's header (no
pickles, no members that are not arrays, not too many, not more than memory allows)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from core.errors import QuantizeError, WorkbenchError, brief
from core.model.archives import list_members

__all__ = ["MAX_ARRAYS", "MAX_ARRAY_BYTES", "check_npz", "listed"]


MAX_ARRAYS = 256  # a model with more inputs than this is not one a calibration file is made for
MAX_ARRAY_BYTES = 4 << 30


def listed(names: list[str], most: int = 5) -> str:
    shown = ", ".join(brief(n, 40) for n in names[:most])
    return shown + (f" and {len(names) - most:,} more" if len(names) > most else "")


def check_npz(path: str, what: str = "calibration file", error: type[WorkbenchError] = QuantizeError) -> None:
    """Read the .npz's listing and each array's header (shape and dtype) before loading anything: no pickles,
    no members that are not arrays, not too many, not more than memory allows."""
    import numpy as np

    try:
        members = list_members(Path(path))
    except WorkbenchError as exc:
        raise error(f"The {what} is not a readable .npz archive: {exc}") from None
    if len(members) > MAX_ARRAYS:
        raise error(f"The {what} holds {len(members):,} arrays; a model takes one per input.")
    total = 0
    with zipfile.ZipFile(path) as archive:
        for member in members:
            if not member.filename.endswith(".npy"):
                raise error(f"The {what} holds '{brief(member.filename)}', which is not an array.")
            with archive.open(member) as fh:
                try:
                    version = np.lib.format.read_magic(fh)
                    header = (
                        np.lib.format.read_array_header_1_0
                        if version == (1, 0)
                        else np.lib.format.read_array_header_2_0
                    )
                    shape, _, dtype = header(fh)
                except Exception:
                    raise error(f"'{brief(member.filename)}' in the {what} is not an array.") from None
            if dtype.hasobject:
                raise error(
                    f"'{brief(member.filename)}' in the {what} holds Python objects (a pickle), which are "
                    "never loaded here; save plain numeric arrays, and strings as a text array "
                    "(np.array(texts, dtype=str): numpy's '<U' arrays need no pickle)."
                )
            total += int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if total > MAX_ARRAY_BYTES:
        raise error(
            f"The {what} would take {total / 2**30:,.1f} GB in memory once unpacked; at most "
            f"{MAX_ARRAY_BYTES >> 30} GB are read. Use fewer samples (a few hundred are plenty)."
        )
