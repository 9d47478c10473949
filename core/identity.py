"""Who is using the app: a person signed in (through OpenID Connect or a trusted proxy), or anonymous.

Models and runs carry their owner and team. A person is taken only from what can be trusted: an email their
provider has verified (or one from a provider the operator names as trusted), the provider's own subject, a
trusted proxy's single header. Nothing is ever cleaned into someone else: text with invisible, format or control
characters, or longer than the limit, is refused (IdentityRefused), never stripped or cut.

The keys live in three namespaces that no text can cross:

- a person with an email: the email in lower case (``alice@acme.test``): it has an ``@`` and never a ``:``;
- a person without one at an OpenID provider: ``oidc:<issuer>#<subject>`` (an issuer never holds a ``#``);
- a person a proxy names without an email: the name as the proxy gives it, which has neither ``@`` nor ``:``.

A team is a name configured by the operator (a claim, a header, a map of mail domains to teams), never a public
mail domain; a person without one is a team of one, ``person:<key>``, a name no configured team may take. Every
anonymous visitor is in the anonymous team (``""``), which is how a workshop shares one instance without accounts.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from core.errors import IdentityRefused
from core.i18n import DEFAULT, N_, _, language, number

__all__ = [
    "ANONYMOUS",
    "MAX_LENGTH",
    "PUBLIC_MAIL_DOMAINS",
    "Identity",
    "domain_teams",
    "from_claims",
    "from_headers",
    "named",
    "stored_owner",
]

MAX_LENGTH = 256  # characters of a key or a team: what the history's columns hold
ALONE = "person:"  # a team of one: ALONE + the person's key

# Mail domains where anyone may get an address: never a team, even when an operator maps one by mistake
PUBLIC_MAIL_DOMAINS = frozenset(
    {
        "gmail.com", "googlemail.com", "outlook.com", "hotmail.com", "live.com", "msn.com", "yahoo.com",
        "ymail.com", "icloud.com", "me.com", "mac.com", "aol.com", "proton.me", "protonmail.com", "pm.me",
        "gmx.com", "gmx.net", "gmx.de", "web.de", "mail.com", "mail.ru", "yandex.ru", "yandex.com", "qq.com",
        "163.com", "126.com", "zoho.com", "fastmail.com", "tutanota.com", "hey.com",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Identity:
    user: str = ""  # the person's key (see the module's docstring); "" for anonymous
    name: str = ""  # how to greet them
    team: str = ""  # who shares their models and runs; "" is the anonymous team

    @property
    def signed_in(self) -> bool:
        return bool(self.user)

    @property
    def label(self) -> str:
        return self.name or self.user or "anonymous"

    @property
    def alone(self) -> bool:
        """A signed-in person in a team of one: nobody to share with."""
        return self.signed_in and self.team == ALONE + self.user


ANONYMOUS = Identity()

# The way out each source of identities offers (the end of every refusal's message)
# the way out each refusal ends with; translated where the refusal is made (_refuse)
_OIDC = N_("Sign in with another account, or ask whoever runs your sign-in provider to correct it.")
_PROXY = N_("Ask whoever runs this instance's sign-in proxy to correct it.")
_OPERATOR = N_("Name them as they are, or not at all.")
_COMMAND_LINE = N_("the command line")
_SIGN_IN_PROXY = N_("the sign-in proxy")

# Unicode's control (Cc), format (Cf: zero-width and direction marks), private-use (Co), surrogate (Cs) and
# unassigned (Cn) characters, and its line and paragraph separators (Zl, Zp): none is ever part of anyone's name
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
# an email: no spaces, separators, quotes or brackets; a domain of dot-separated labels
_LOCAL = r"[^@\s:,;<>()\[\]\"\\/]+"
_LABEL = r"[^@\s:,;<>()\[\]\"\\/.]+"
_EMAIL = re.compile(rf"{_LOCAL}@{_LABEL}(?:\.{_LABEL})*")


def _nth(n: int) -> str:
    """1st, 2nd, 3rd... in English; the number alone in a language that writes the ordinal around it (第 3 个)."""
    if language() != DEFAULT:
        return str(n)
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _problem(value: object, *, spaces: bool = False) -> str:
    """Why ``value`` cannot name anyone ("" when it can): not text, too long, an invisible, format or control
    character, whitespace (single plain spaces inside where ``spaces``), or text not in Unicode's composed form
    (two spellings of one name)."""
    if not isinstance(value, str):
        return _("is not text (a {kind})").format(kind=type(value).__name__)
    if len(value) > MAX_LENGTH:
        return _("is {count} characters long, over the limit of {most}").format(
            count=number(len(value)), most=MAX_LENGTH
        )
    for position, ch in enumerate(value, 1):
        category = unicodedata.category(ch)
        if category in _REFUSED_CATEGORIES:
            said = _("holds an invisible or control character (U+{code} {name}, the {nth} character)")
        elif (ch.isspace() or category == "Zs") and not (spaces and ch == " "):
            said = (
                _("holds a space (U+{code} {name}, the {nth} character)")
                if ch == " "
                else _("holds an unusual space (U+{code} {name}, the {nth} character)")
            )
        else:
            continue
        return said.format(code=f"{ord(ch):04X}", name=unicodedata.name(ch, ""), nth=_nth(position))
    if spaces and (value != value.strip(" ") or "  " in value):
        return _("starts or ends with a space, or holds two in a row")
    if not unicodedata.is_normalized("NFC", value):
        return _("is not in Unicode's composed form (NFC)")
    return ""


def _refuse(what: str, problem: str, way_out: str) -> IdentityRefused:
    return IdentityRefused(
        _(
            "{what} {problem}, so this instance cannot tell who you are: it never turns a name into another one. "
            "{way_out}"
        ).format(what=what, problem=problem, way_out=_(way_out))
    )


def _checked(value: object, what: str, way_out: str, *, spaces: bool = False) -> str:
    """``value`` exactly as given, or IdentityRefused saying why it cannot name anyone (``_problem``)."""
    problem = _problem(value, spaces=spaces)
    if problem:
        raise _refuse(what, problem, way_out)
    assert isinstance(value, str)
    return value


def _email(value: str, what: str, way_out: str) -> str:
    """The key of a checked email: the address in lower case (two spellings of one mailbox are one person)."""
    if not _EMAIL.fullmatch(value):
        raise _refuse(what, _("is not an email address (name@domain, without spaces, quotes or brackets)"), way_out)
    return value.lower()


def _team_name(value: str, what: str, way_out: str) -> str:
    if value.startswith(ALONE):
        raise _refuse(
            what, _("starts with {prefix}, which names a team of one here").format(prefix=repr(ALONE)), way_out
        )
    return value


def _person(user: str, name: str, team: str, domain: str, team_domains: Mapping[str, str] | None) -> Identity:
    """Their team: the one given (a claim or header), else the one the map gives their email's ``domain`` (""
    for a person without an email), else a team of one."""
    if not team and domain:
        team = (team_domains or {}).get(domain, "")
    return Identity(user=user, name=name, team=team or ALONE + user)


def _greeting(value: object) -> str:
    """How to greet someone: their name claim when it is plain text, else nothing (they are greeted by their key;
    a name only greets, it names no one, so a bad one is left out rather than refused)."""
    return value if isinstance(value, str) and not _problem(value, spaces=True) else ""


def _verified(claims: Mapping[str, object], issuer: str, trusted_issuers: Collection[str], email: str) -> None:
    """Refuse an email the provider has not verified: ``email_verified`` true (or "true"), or, where it is not
    sent at all, a provider its operator trusts (``oidc_trusted_issuers``)."""
    verified = claims.get("email_verified")
    if verified is True or (isinstance(verified, str) and verified.lower() == "true"):
        return
    if verified is None and issuer in trusted_issuers:
        return
    said = _("says it is not verified") if verified is not None else _("does not say it is verified")
    raise IdentityRefused(
        _(
            "Your sign-in provider gives {email} as your email but {said}, and anyone can type "
            "an address they do not own, so this instance does not take it as who you are. "
            "Verify the address at your provider and sign in again, or sign in with another "
            "account. (If your provider never says whether an address is verified, the operator "
            "of this instance can name it in the setting oidc_trusted_issuers.)"
        ).format(email=email, said=said)
    )


def _claimed_team(value: object, claim: str) -> str:
    """The team a claim names: one value (a text, or a list of one); "" when absent."""
    if value is None or value == "" or value == []:
        return ""
    what = _("The team your sign-in provider names in its {claim} claim").format(claim=repr(claim))
    if isinstance(value, list | tuple):
        if len(value) != 1:
            raise IdentityRefused(
                _(
                    "Your sign-in provider names {count} teams for you in its {claim} claim, and on this "
                    "instance a person is in one team. Ask its operator to set team_claim to a claim "
                    "that names one."
                ).format(count=len(value), claim=repr(claim))
            )
        value = value[0]
    return _team_name(_checked(value, what, _OIDC, spaces=True), what, _OIDC)


def from_claims(
    claims: Mapping[str, object],
    team_claim: str = "",
    team_domains: Mapping[str, str] | None = None,
    trusted_issuers: Collection[str] = (),
) -> Identity:
    """The person an OpenID Connect ID token names: their verified email, else ``oidc:<iss>#<sub>``; their name;
    their team: the ``team_claim`` claim, else their email's domain in ``team_domains``, else a team of one.
    Raises IdentityRefused for claims that cannot name someone safely."""
    if not claims.get("iss"):
        raise IdentityRefused(
            _("Your sign-in provider names no issuer (iss) in its token. {way_out}").format(way_out=_(_OIDC))
        )
    issuer = _checked(claims["iss"], _("The issuer your sign-in provider names"), _OIDC)
    if "#" in issuer:  # never in an issuer (OpenID Connect Discovery); here it would shift the key's split
        raise _refuse(_("The issuer your sign-in provider names"), _("holds a '#'"), _OIDC)
    email = claims.get("email")
    domain = ""
    if email is not None and email != "":
        what = _("The email address your sign-in provider gives")
        user = _email(_checked(email, what, _OIDC), what, _OIDC)
        _verified(claims, issuer, trusted_issuers, user)
        domain = user.rpartition("@")[2]
    else:
        what = _("The subject (sub) your sign-in provider names")
        subject = _checked(claims.get("sub"), what, _OIDC, spaces=True)
        if not subject:
            raise _refuse(what, _("is empty"), _OIDC)
        user = f"oidc:{issuer}#{subject}"
        if len(user) > MAX_LENGTH:
            raise _refuse(
                _("Your sign-in provider's issuer and subject"),
                _("are over {most} characters").format(most=MAX_LENGTH),
                _OIDC,
            )
    team = _claimed_team(claims.get(team_claim), team_claim) if team_claim else ""
    return _person(user, _greeting(claims.get("name")), team, domain, team_domains)


def named(
    user: str,
    team: str = "",
    team_domains: Mapping[str, str] | None = None,
    by: str = _COMMAND_LINE,
    way_out: str = _OPERATOR,
) -> Identity:
    """A person named ``by`` someone trusted (a sign-in proxy, the operator on the command line): an email (kept
    in lower case) or a user name (without ``@`` or ``:``), and their team, else their domain's in
    ``team_domains``, else a team of one. ANONYMOUS for ``""``; IdentityRefused for a name that cannot name
    someone safely."""
    if not user:
        return ANONYMOUS
    what = _("The person {by} names").format(by=_(by))
    checked = _checked(user, what, way_out)
    key, domain = checked, ""
    if "@" in checked:
        key = _email(checked, what, way_out)
        domain = key.rpartition("@")[2]
    elif ":" in checked:
        raise _refuse(what, _("holds a ':', which only keys of sign-in providers hold"), way_out)
    what = _("The team {by} names").format(by=_(by))
    given = _team_name(_checked(team, what, way_out, spaces=True), what, way_out)
    return _person(key, "", given, domain, team_domains)


def _single(headers: Mapping[str, Sequence[str]], header: str) -> str:
    """The one value of ``header`` (any case); "" when absent. A header sent twice, or holding a list, is refused:
    which one the proxy set cannot be told (a proxy appends its own to the one a client sent)."""
    values = [v for name, given in headers.items() if name.lower() == header.lower() for v in given]
    if len(values) > 1:
        raise IdentityRefused(
            _(
                "The {header} header arrived {count} times, and which one the sign-in proxy set "
                "cannot be told, so this instance does not let you in. Ask whoever runs its sign-in "
                "proxy to make the proxy replace {header} on every request, never add to it."
            ).format(header=header, count=len(values))
        )
    if values and "," in values[0]:
        raise _refuse(_("The {header} header").format(header=header), _("holds a list (a ',')"), _PROXY)
    return values[0] if values else ""


def from_headers(
    headers: Mapping[str, Sequence[str]],
    user_header: str,
    team_header: str = "",
    team_domains: Mapping[str, str] | None = None,
) -> Identity:
    """The person a trusted sign-in proxy names in ``user_header`` (each header name with every value it came
    with), their team in ``team_header`` (else the map's, else alone). ANONYMOUS when the header is absent."""
    user = _single(headers, user_header) if user_header else ""
    team = _single(headers, team_header) if team_header and user else ""
    return named(user, team, team_domains, _SIGN_IN_PROXY, _PROXY)


def domain_teams(text: str) -> dict[str, str]:
    """The ``team_domains`` setting as a map: ``"acme.test=acme, acme.org=acme, beta.test"`` (a domain alone is
    a team of its own name). ValueError, naming the entry, for a public mail domain or a name that cannot be one."""
    teams: dict[str, str] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        domain, _, team = (part.strip() for part in entry.partition("="))
        domain = domain.lower()
        if _problem(domain) or not _EMAIL.fullmatch(f"x@{domain}"):
            raise ValueError(f"setting team_domains: {entry!r} does not start with a mail domain (acme.test=acme)")
        if domain in PUBLIC_MAIL_DOMAINS:
            raise ValueError(
                f"setting team_domains: {domain} is a public mail domain, where anyone can have an address; it cannot "
                "be a team (use team_claim or proxy_team_header for people with such addresses)"
            )
        name = team or domain
        problem = _problem(name, spaces=True) or (f"starts with {ALONE!r}" if name.startswith(ALONE) else "")
        if problem:
            raise ValueError(f"setting team_domains: the team of {domain} {problem}")
        if teams.setdefault(domain, name) != name:
            raise ValueError(f"setting team_domains: {domain} is given two teams, {teams[domain]} and {name}")
    return teams


def stored_owner(owner: str) -> str:
    """An owner as an earlier version stored it, as this one keys it: an email in lower case."""
    return owner.lower() if "@" in owner and ":" not in owner else owner
