"""The reference's tensors on disk while the second model runs, so a comparison never holds both models' tensors:
the first model runs alone, a group at a time, each tensor written to a file as it comes; then the second model
runs and each of its tensors is measured against the file read back, which is removed once read (issue #51)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["Spool"]


class Spool:
    """Tensors written one file each into ``folder`` (numpy's format, never pickled), read back one at a time."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.written = 0  # bytes written in all
        self._files: dict[str, Path] = {}
        self._kept: dict[str, Any] = {}  # what numpy writes only by pickling (a sequence, a map, strings): kept

    def __contains__(self, name: str) -> bool:
        return name in self._files or name in self._kept

    def __len__(self) -> int:
        return len(self._files) + len(self._kept)

    def put(self, name: str, value: Any) -> None:
        """Write ``value`` (the caller drops it then); a value that is not a plain array is kept as it is."""
        import numpy as np

        if not isinstance(value, np.ndarray) or value.dtype.hasobject:
            self._kept[name] = value
            return
        path = self.folder / f"{len(self._files) + len(self._kept)}.npy"  # a tensor's name may hold any character
        np.save(path, value, allow_pickle=False)
        self._files[name] = path
        self.written += value.nbytes

    def take(self, name: str) -> Any:
        """The value written as ``name``, its file removed (each is compared once)."""
        import numpy as np

        if name in self._kept:
            return self._kept.pop(name)
        path = self._files.pop(name)
        value = np.load(path, allow_pickle=False)
        path.unlink()
        return value
