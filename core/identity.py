"""Who is using the app: a person signed in (through OpenID Connect or a trusted proxy), or anonymous.

Models and runs carry their owner and team. A team sees its own; every anonymous user is in the anonymous
team (``""``), which is how a workshop shares one instance without accounts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["ANONYMOUS", "Identity", "from_claims", "from_headers", "team_of"]


@dataclass(frozen=True)
class Identity:
    user: str = ""  # a stable id, the email where there is one; "" for anonymous
    name: str = ""  # how to greet them
    team: str = ""  # who shares their models and runs; "" is the anonymous team

    @property
    def signed_in(self) -> bool:
        return bool(self.user)

    @property
    def label(self) -> str:
        return self.name or self.user or "anonymous"


ANONYMOUS = Identity()


def team_of(email: str) -> str:
    """The team an email belongs to when nothing says otherwise: its domain (alice@acme.test: acme.test)."""
    _, at, domain = email.strip().lower().rpartition("@")
    return domain if at and domain else ""


# Claims and headers are untrusted text: kept to a sane length, control characters out
_MAX_TEXT = 256


def _text(value: object) -> str:
    if isinstance(value, list | tuple) and value:
        value = value[0]  # a multi-valued claim (groups): its first value
    if not isinstance(value, str):
        return ""
    return "".join(ch for ch in value if ch.isprintable()).strip()[:_MAX_TEXT]


def _person(user: str, name: str, team: str) -> Identity:
    """A signed-in person; without a team (no claim, no domain) they are a team of one, never the anonymous one."""
    return Identity(user=user, name=name or user, team=team or team_of(user) or user) if user else ANONYMOUS


def from_claims(claims: Mapping[str, object], team_claim: str = "") -> Identity:
    """The person an OpenID Connect ID token names: their email (else ``sub``), their name, and their team.

    The team is the ``team_claim`` claim when one is configured (missing: a team of one), else the email's domain.
    """
    email, sub = _text(claims.get("email")), _text(claims.get("sub"))
    user = email or sub
    if team_claim:
        return _person(user, _text(claims.get("name")), _text(claims.get(team_claim)) or user)
    return _person(user, _text(claims.get("name")), team_of(email))


def from_headers(headers: Mapping[str, str], user_header: str, team_header: str = "") -> Identity:
    """The person a trusted sign-in proxy names in ``user_header`` (team: ``team_header``, else the domain)."""
    lowered = {key.lower(): value for key, value in headers.items()}
    user = _text(lowered.get(user_header.lower())) if user_header else ""
    team = _text(lowered.get(team_header.lower())) if team_header else ""
    return _person(user, "", team)
