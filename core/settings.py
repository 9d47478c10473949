"""One settings object for limits and modes, read from the environment and .streamlit/secrets.toml."""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.identity import domain_teams

__all__ = ["IntakeLimits", "Settings", "load_settings", "user_cache_folder", "user_data_folder"]

ENV_PREFIX = "WORKBENCH_"
PROJECT_ROOT = Path(__file__).resolve().parent.parent
AUTH_MODES = ("", "oidc", "proxy")
APP_NAME = "onnx-workbench"


@dataclass(frozen=True, kw_only=True)
class IntakeLimits:
    """What intake accepts; the worker hands every job that takes ``limits`` the ones of the server's settings."""

    max_nodes: int = 500_000
    max_initializers: int = 500_000
    max_value_infos: int = 1_000_000
    max_attributes: int = 1_000_000
    max_initializer_bytes: int = 8 << 30
    allow_code_archives: bool = True


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Limits and switches; every field can be set as WORKBENCH_<FIELD> or under [workbench] in secrets.toml."""

    mode: str = "local"  # "local" (one person, their own files) or "hosted" (shared, untrusted uploads)
    allow_code_archives: bool = True  # TorchScript and .pt2 archives, and a model's own .py or package, carry code
    max_upload_mb: int = 1024
    max_nodes: int = 500_000  # in every graph and local function, as written and as ONNX Runtime inlines them
    max_initializers: int = 500_000  # sparse ones and subgraphs' included
    max_value_infos: int = 1_000_000  # graph inputs, outputs and value_info entries, in every graph
    max_attributes: int = 1_000_000  # node attributes, in every graph and function
    max_initializer_mb: int = 8192
    worker_memory_mb: int = 6144
    worker_timeout_s: float = 600.0
    # workspaces, kept models, locks and the default history; "" is this user's data folder (user_data_folder)
    data_dir: str = ""
    # what is made once and reused (the samples' exports); "" is this user's cache folder (user_cache_folder)
    cache_dir: str = ""
    workspace_max_age_h: float = 24.0
    workspace_quota_mb: int = 20480  # what one browser session may keep on disk (uploads, exports, results)
    library_max_age_h: float = 720.0  # a signed-in person's kept model, unused this long, is forgotten
    library_quota_mb: int = 0  # what one signed-in person's library may hold (all anonymous ones together); 0: no cap
    # of the anonymous keepings' library_quota_mb, what one anonymous browser session's may take (0 < share <= 1)
    library_session_share: float = 0.25
    start_sample: str = "tinycnn"  # the sample a new session starts with; "" starts with no model
    history_url: str = ""  # SQLAlchemy URL of the benchmark history; "" is a SQLite file in data_dir
    max_workers: int = 0  # worker processes at once for the whole server; 0 is twice the CPU cores
    max_jobs_per_session: int = 2  # jobs one browser session may run at once
    # the next step's job of a small model starts as a page offers it (Decode's on the Model page, Partition's on
    # Decode), in a slot of the session's left beside it, so that the click answers at once
    start_ahead: bool = True
    # workers of each kind the server keeps started ahead, imports done (~70 MB; with torch ~250 MB); 0: none
    warm_workers: int = 1
    sandbox: bool = True  # run each worker in a bubblewrap sandbox when this machine has it
    require_sandbox: bool = False  # refuse to run jobs (and to start) without the sandbox
    auth: str = ""  # who signs people in: "" nobody (everyone is anonymous), "oidc" (st.login), "proxy" (a header)
    proxy_user_header: str = ""  # with auth=proxy: the header the sign-in proxy names the person in
    proxy_team_header: str = ""  # with auth=proxy: a header naming their team; "" (or absent): team_domains
    team_claim: str = ""  # with auth=oidc: the ID-token claim naming the team; "" (or absent): team_domains
    # mail domains whose people are a team: "acme.test=acme, acme.org=acme, beta.test" (a domain alone: a team of
    # its name); anyone else without a team claim or header is a team of one. Public mail domains are refused.
    team_domains: str = ""
    # with auth=oidc: issuers (the providers' `iss`) whose email claim is taken when they do not send
    # email_verified at all (some never do); from any other, an email counts only with email_verified true
    oidc_trusted_issuers: str = ""
    # a Ray cluster whose nodes are targets jobs can be sent to (host:port of its head, or ray://host:port);
    # "": every job runs on this server. One that cannot be reached falls back to this server, with a warning.
    cluster_address: str = ""
    # join a cluster_address that does not use Ray's token authentication (or without holding its token): anyone
    # who reaches such a cluster runs code on its nodes; the sidebar and the command line say so
    cluster_insecure: bool = False
    # a teaching workshop: participants join a room by its code and a display name, and a Classroom page, open to
    # whoever holds facilitator_key, sets the room and projects its board (docs/classroom.md)
    workshop: bool = False
    facilitator_key: str = ""  # the teacher's key for the Classroom page; with workshop on and no key, it stays shut
    room_hours: float = 8.0  # a room's code expires this long after it opens (or when the teacher closes it)
    # the largest model (with its external data) sent to a visitor's browser to run there (Benchmark's "This
    # browser" and `python -m core browser-bench`); a larger one is refused before any byte is sent
    browser_model_mb: int = 200

    @property
    def hosted(self) -> bool:
        return self.mode == "hosted"

    @property
    def workspace_root(self) -> Path:
        return Path(self.data_dir) / "workspaces"

    @property
    def lock_dir(self) -> Path:
        return Path(self.data_dir) / "locks"

    @property
    def scratch_root(self) -> Path:
        """Where each job gets a private working folder (its /tmp), removed when the job ends."""
        return Path(self.data_dir) / "scratch"

    @property
    def worker_limit(self) -> int:
        return self.max_workers if self.max_workers > 0 else 2 * (os.cpu_count() or 1)

    @property
    def store_url(self) -> str:
        return self.history_url or f"sqlite:///{Path(self.data_dir) / 'history.sqlite'}"

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * 1024 * 1024

    @property
    def workspace_quota_bytes(self) -> int:
        return self.workspace_quota_mb * 1024 * 1024

    @property
    def max_initializer_bytes(self) -> int:
        return self.max_initializer_mb * 1024 * 1024

    @property
    def teams_by_domain(self) -> dict[str, str]:
        return domain_teams(self.team_domains)

    @property
    def trusted_issuers(self) -> frozenset[str]:
        return frozenset(i.strip() for i in self.oidc_trusted_issuers.split(",") if i.strip())

    @property
    def intake_limits(self) -> IntakeLimits:
        """Every limit intake checks is the setting of its name."""
        return IntakeLimits(**{limit.name: getattr(self, limit.name) for limit in dataclasses.fields(IntakeLimits)})


# Hosted mode serves strangers: tighter limits, and code archives off unless the operator turns them on.
_HOSTED_DEFAULTS: dict[str, Any] = {
    "allow_code_archives": False,
    "max_upload_mb": 200,
    "max_nodes": 100_000,
    "max_initializers": 100_000,
    "max_value_infos": 200_000,
    "max_attributes": 200_000,
    "max_initializer_mb": 1024,
    "worker_memory_mb": 3072,
    "worker_timeout_s": 180.0,
    "workspace_max_age_h": 6.0,
    "workspace_quota_mb": 4096,
    "library_quota_mb": 4096,
    "max_jobs_per_session": 1,
    "require_sandbox": True,
    "browser_model_mb": 50,
}


def user_data_folder() -> str:
    """The default data folder: this user's own, lasting across reboots and shared by every checkout they run
    (``~/.local/share/onnx-workbench`` on Linux, or under ``$XDG_DATA_HOME``; platformdirs' user data dir)."""
    import platformdirs

    return platformdirs.user_data_dir(APP_NAME, appauthor=False)


def user_cache_folder() -> str:
    """The default cache folder: this user's own (``~/.cache/onnx-workbench`` on Linux, or under
    ``$XDG_CACHE_HOME``; platformdirs' user cache dir). Whatever lies there can be made again."""
    import platformdirs

    return platformdirs.user_cache_dir(APP_NAME, appauthor=False)


def _coerce(name: str, raw: Any, kind: type) -> Any:
    if kind is bool and isinstance(raw, str):
        lowered = raw.strip().lower()
        if lowered in {"1", "true", "yes", "on"}:
            return True
        if lowered in {"0", "false", "no", "off"}:
            return False
        raise ValueError(f"setting {name}={raw!r}: expected true or false")
    try:
        return kind(raw)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"setting {name}={raw!r}: expected a {kind.__name__}") from exc


def _secrets(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    with path.open("rb") as fh:
        data = tomllib.load(fh)
    section = data.get("workbench", {})
    return section if isinstance(section, dict) else {}


def load_settings(
    environ: dict[str, str] | None = None, secrets_path: str | os.PathLike[str] | None = None
) -> Settings:
    """Settings from defaults, then the mode's defaults, then secrets.toml, then WORKBENCH_* variables."""
    env = dict(os.environ if environ is None else environ)
    secrets = _secrets(Path(secrets_path) if secrets_path else PROJECT_ROOT / ".streamlit" / "secrets.toml")
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    kinds = {name: type(f.default) for name, f in fields.items()}

    def lookup(name: str) -> Any:
        if ENV_PREFIX + name.upper() in env:
            return env[ENV_PREFIX + name.upper()]
        return secrets.get(name)

    mode = str(lookup("mode") or "local").strip().lower()
    if mode not in {"local", "hosted"}:
        raise ValueError(f"setting mode={mode!r}: expected 'local' or 'hosted'")
    values: dict[str, Any] = {"mode": mode}
    if mode == "hosted":
        values.update(_HOSTED_DEFAULTS)
    for name in fields:
        if name == "mode":
            continue
        raw = lookup(name)
        if raw is not None:
            values[name] = _coerce(name, raw, kinds[name])
    share = values.get("library_session_share", Settings.library_session_share)
    if not 0 < share <= 1:
        raise ValueError(
            f"setting library_session_share={share!r}: expected a fraction above 0 and at most 1, e.g. 0.25"
        )
    _check_auth(values)
    values["data_dir"] = str(values.get("data_dir") or "").strip() or user_data_folder()
    values["cache_dir"] = str(values.get("cache_dir") or "").strip() or user_cache_folder()
    return Settings(**values)


def _check_auth(values: dict[str, Any]) -> None:
    """The sign-in settings, normalised in place: a known auth mode, and the header a proxy mode needs."""
    auth = values["auth"] = str(values.get("auth", "")).strip().lower()
    if auth not in AUTH_MODES:
        raise ValueError(f"setting auth={auth!r}: expected '' (no sign-in), 'oidc' (OpenID Connect) or 'proxy'")
    for name in ("proxy_user_header", "proxy_team_header", "team_claim", "team_domains", "oidc_trusted_issuers"):
        values[name] = str(values.get(name, "")).strip()
    domain_teams(values["team_domains"])  # a ValueError naming the entry that cannot be a team
    if auth == "proxy" and not values["proxy_user_header"]:
        raise ValueError(
            "setting auth='proxy' needs proxy_user_header: the header your sign-in proxy puts the person's email "
            "or user name in (e.g. WORKBENCH_PROXY_USER_HEADER=X-Forwarded-Email)"
        )
