"""What a sandboxed worker sees of the host, in the manner of Flatpak: only what running Python needs.

The system's programs and libraries (``/usr``, with ``/bin``, ``/sbin`` and ``/lib*`` laid out as on the host), the
few files of ``/etc`` the loader and the C library read, the Python installation (its prefixes and wherever its
packages really lie, following links: a virtual environment may be a link to another folder, and pyenv keeps
Python in root's home, of which only that one folder is shown) and the project's code, all read-only, without the
project's ``.git`` and ``.streamlit``. No home folder, no ``/home``, ``/root``, ``/var``, ``/srv``, ``/opt`` or
``/mnt`` beyond what the Python installation needs, no other file of ``/etc``. A job's own paths, the worker's
private ``/tmp``, ``/dev`` and ``/proc`` are added by core.jobs.sandbox.
"""

from __future__ import annotations

import functools
import os
import site
import sys
from pathlib import Path

from core.settings import PROJECT_ROOT

__all__ = ["ETC_FILES", "NVIDIA_DEVICES", "code_folders", "host_view", "python_installation", "runtime_view"]

# /usr/lib64 and the like are under /usr; the top-level names are links to them on a merged-/usr system
_SYSTEM_TOP = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The loader's cache and configuration, the time zone, and the name-service switch: with it (and no passwd file)
# the C library still names root and nobody (nss-systemd), which some libraries ask for.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf")
# what a runtime with a GPU build (core.runtime.runtimes) must see of /dev: the driver's control, memory and capability
# devices and one node per GPU (the sandbox's /dev is otherwise a fresh one with null, zero, random and the like)
NVIDIA_DEVICES: tuple[str, ...] = (
    "/dev/nvidiactl",
    "/dev/nvidia-uvm",
    "/dev/nvidia-uvm-tools",
    "/dev/nvidia-modeset",
    "/dev/nvidia[0-9]*",
    "/dev/nvidia-caps/*",
)
# of the project's own folder, its history (a remote's address may hold a token); its secrets (.streamlit) are
# hidden with the data folder (core.jobs.sandbox.hidden_folders)
_PROJECT_HIDDEN = (".git",)


def _as_on_host(path: str) -> list[str]:
    """bubblewrap's arguments that show ``path`` as the host has it: a link as the same link, else read-only."""
    if os.path.islink(path):
        return ["--symlink", os.readlink(path), path]
    if os.path.exists(path):
        return ["--ro-bind", path, path]
    return []


def _links_on_the_way(path: Path, depth: int = 0) -> list[tuple[Path, str]]:
    """Every link met while following ``path`` to the file it names, as (where the link is, what it says), in
    the order they are met: the sandbox must hold the same links to reach the same file."""
    found: list[tuple[Path, str]] = []
    here = Path("/")
    for part in path.parts[1:]:
        step = here / part
        if depth < 20 and step.is_symlink():
            target = os.readlink(step)
            found += [(step, target), *_links_on_the_way(here / target, depth + 1)]
            here = step.resolve()
        else:
            here = step
    return found


def _pth_folders(folder: str) -> list[str]:
    """The folders a site folder's ``.pth`` files add to the path (as the ``site`` module reads them)."""
    found = []
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".pth"))
    except OSError:
        return []
    for name in names:
        try:
            lines = Path(folder, name).read_text(errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            if line.strip() and not line.startswith(("#", "import ", "import\t")):
                path = os.path.join(folder, line.rstrip())
                if os.path.isdir(path):
                    found.append(path)
    return found


def _inside(path: Path, places: list[Path]) -> bool:
    return any(path.is_relative_to(place) for place in places)


def _python_paths() -> list[Path]:
    """The Python installation this process runs, as it names itself: its prefixes, its executable, its site
    folders and what their ``.pth`` files add."""
    sites = site.getsitepackages()
    named = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, sys.executable, *sites]
    named += [p for folder in sites for p in _pth_folders(folder)]
    return [Path(os.path.abspath(p)) for p in dict.fromkeys(named) if os.path.exists(p)]


@functools.cache
def python_installation() -> tuple[tuple[Path, ...], tuple[tuple[Path, str], ...]]:
    """(folders, links): the real folders of the Python installation (``_python_paths``), outside ``/usr`` and
    the project, each shown once; and the links on the way to them that lie outside every folder shown."""
    paths = _python_paths()
    shown = [Path("/usr"), PROJECT_ROOT]
    folders: list[Path] = []
    for real in sorted({p.resolve() for p in paths}, key=lambda p: len(p.parts)):
        if not _inside(real, [*shown, *folders]):
            folders.append(real)
    links = {link: target for p in paths for link, target in _links_on_the_way(p)}
    tops = [Path(top) for top in _SYSTEM_TOP]
    outside = [(link, target) for link, target in links.items() if link not in tops]
    return tuple(folders), tuple((link, t) for link, t in outside if not _inside(link, [*shown, *folders]))


@functools.cache
def host_view() -> tuple[str, ...]:
    """bubblewrap's arguments for everything a worker sees of the host, read-only (the same for every job)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in _SYSTEM_TOP:
        args += _as_on_host(top)
    for name in ETC_FILES:
        args += _as_on_host(f"/etc/{name}")
    folders, links = python_installation()
    for folder in folders:
        args += ["--ro-bind", str(folder), str(folder)]
    for link, target in links:
        args += ["--symlink", target, str(link)]
    args += ["--ro-bind", str(PROJECT_ROOT), str(PROJECT_ROOT)]
    for name in _PROJECT_HIDDEN:
        hidden = PROJECT_ROOT / name
        if hidden.is_dir() and not hidden.is_symlink():
            args += ["--size", "4096", "--tmpfs", str(hidden)]
        elif hidden.is_file() and not hidden.is_symlink():  # a worktree's .git is a file naming where the history is
            args += ["--ro-bind", "/dev/null", str(hidden)]
    return tuple(args)


def _venv_paths(root: Path) -> list[Path]:
    """A virtual environment's folders as its own Python would name them, read from its files rather than asked
    (its ``pyvenv.cfg`` names the Python it was made from; its site folder's ``.pth`` files add folders)."""
    found = [root]
    try:
        config = (root / "pyvenv.cfg").read_text(errors="replace").splitlines()
    except OSError:
        config = []
    for line in config:
        key, _sep, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            found.append(Path(value.strip()).parent)  # .../bin's parent: the base installation
    for site_folder in root.glob("lib*/python*/site-packages"):
        found += [Path(p) for p in _pth_folders(str(site_folder))]
    found.append(root / "bin" / "python")
    return [Path(os.path.abspath(p)) for p in found if os.path.exists(p)]


def _nvidia_devices() -> list[str]:
    return sorted({str(p) for pattern in NVIDIA_DEVICES for p in Path("/").glob(pattern.lstrip("/"))})


@functools.cache
def runtime_view(root: str, gpu: bool = False) -> tuple[str, ...]:
    """bubblewrap's arguments that show a runtime's environment (core.runtime.runtimes) beside ``host_view``,
    read-only: its folder and what it reads that the host view does not show (the Python it was made from, the
    folders its ``.pth`` files add); with ``gpu``, the NVIDIA devices, which a GPU build's worker needs and no
    other worker is shown. The default runtime ("") adds nothing."""
    if not root:
        return ()
    shown = [Path("/usr"), PROJECT_ROOT, *python_installation()[0]]
    args: list[str] = []
    paths = _venv_paths(Path(root))
    folders: list[Path] = []
    for real in sorted(
        {p.parent if p.is_file() else p for p in (p.resolve() for p in paths)}, key=lambda p: len(p.parts)
    ):
        if not _inside(real, [*shown, *folders]):
            folders.append(real)
            args += ["--ro-bind", str(real), str(real)]
    for link, target in {link: t for p in paths for link, t in _links_on_the_way(p)}.items():
        if not _inside(link, [*shown, *folders]) and str(link) not in _SYSTEM_TOP:
            args += ["--symlink", target, str(link)]
    for device in _nvidia_devices() if gpu else []:
        args += ["--dev-bind-try", device, device]
    return tuple(args)


@functools.cache
def code_folders() -> tuple[Path, ...]:
    """Where the code every worker (and the server) runs lies: the system's, the Python installation's and the
    project's own (its folders that hold Python files, locale/ with the translations its messages use, and .runtimes/
    with the other ONNX Runtime builds' environments; its top folder holds the secrets, and is never given)."""
    packages = [
        p
        for p in PROJECT_ROOT.iterdir()
        if p.is_dir() and not p.is_symlink() and (any(p.glob("*.py")) or p.name in ("locale", ".runtimes"))
    ]
    python = {p.parent if p.is_file() else p for p in (p.resolve() for p in _python_paths())}
    return (Path("/usr"), *sorted(python), *packages)
