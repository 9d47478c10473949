"""The browser bundles committed under ui/*_component/dist, and the sources they are built from."""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["source_hash"]


def source_hash(component: Path) -> str:
    """The sha256 of ``component``'s sources, as ui/bundle.mjs's sourceHash computes it and writes it in the
    banner of the bundle it builds: a bundle with another is older than its sources (its build script, the
    shared one, its lock file, its scripts and stylesheets)."""
    files = ["build.mjs", "../bundle.mjs", "package.json", "package-lock.json"]
    files += [f"src/{p.name}" for p in (component / "src").iterdir() if p.suffix in (".js", ".css")]
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"{name}\0".encode())
        digest.update((component / name).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()
