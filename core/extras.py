"""What the local app does not install: the packages a team server and a cluster need, and the way to add them.

`make run` installs the app (requirements.txt); a team's PostgreSQL history and OpenID Connect sign-in need
requirements-team.txt (`make team`), the Ray cluster backend requirements-cluster.txt (`make cluster-extras`, and
`make cluster` installs it). A setting that needs an extra this installation lacks is refused with these words
instead of Python's ModuleNotFoundError."""

from __future__ import annotations

from importlib.util import find_spec

from core.errors import MissingExtraError

__all__ = ["EXTRAS", "require"]

# name -> (its requirements file, the make target that installs it, the modules it provides)
EXTRAS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "team": ("requirements-team.txt", "make team", ("psycopg", "authlib")),
    "cluster": ("requirements-cluster.txt", "make cluster-extras", ("ray",)),
}


def require(extra: str, module: str, needed_for: str) -> None:
    """Raise MissingExtraError unless ``module`` (one of ``extra``'s) can be imported; ``needed_for`` says what
    asked for it, in the user's words."""
    requirements, target, modules = EXTRAS[extra]
    assert module in modules, module
    if find_spec(module) is None:
        raise MissingExtraError(
            f"{needed_for} needs the {extra} extras ({module}), which this installation lacks. Install them with "
            f"`{target}` (or `.venv/bin/pip install -r {requirements} -c constraints.txt`), then start again."
        )
