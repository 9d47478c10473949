"""Identities that cannot be forged or merged: every way a hostile tester became someone else, or made two
people one, is refused by name (never cleaned into another name).

The browser sees the real flows (an unverified email at the local OpenID provider, a repeated proxy header through
a real request): tests/e2e/test_sign_in_e2e.py. Here, the many cases, on core.identity itself; and a workshop's
display names (core.classroom), which no participant may pile marks onto or make the teacher's."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from core.classroom import clean_name
from core.errors import IdentityRefused, RoomError
from core.i18n import using
from core.identity import MAX_LENGTH, from_claims, from_headers, named
from tests.cli import cli

ISSUER = "https://idp.example"
ALICE = "alice@acme.test"
TEAMS = {"acme.test": "acme"}


def _oidc(**claims: object) -> dict[str, object]:
    return {"iss": ISSUER, "sub": "s-1", **claims}


def _verified(email: str, **claims: object) -> dict[str, object]:
    return _oidc(email=email, email_verified=True, **claims)


def test_an_email_the_provider_has_not_verified_is_nobody() -> None:
    for verified in (None, False, "false", 0, "yes"):
        claims = _oidc(email=ALICE) | ({} if verified is None else {"email_verified": verified})
        with pytest.raises(IdentityRefused, match=r"alice@acme\.test as your email but .*verif"):
            from_claims(claims, team_domains=TEAMS)
    assert from_claims(_verified(ALICE)).user == ALICE


def test_a_subject_shaped_like_an_email_is_not_that_person_nor_in_their_team() -> None:
    alice = from_claims(_verified(ALICE), team_domains=TEAMS)
    mallory = from_claims(_oidc(sub=ALICE), team_domains=TEAMS)  # no email: keyed by issuer and subject
    assert mallory.user == f"oidc:{ISSUER}#{ALICE}" and mallory.user != alice.user
    assert mallory.team == f"person:oidc:{ISSUER}#{ALICE}" and mallory.team != alice.team


def test_no_issuer_and_subject_make_the_key_of_another_identity() -> None:
    # a '#' in a subject cannot shift the split: an issuer never holds one
    one = from_claims({"iss": "https://a.example", "sub": "b#c"})
    with pytest.raises(IdentityRefused, match="holds a '#'"):
        from_claims({"iss": "https://a.example#b", "sub": "c"})
    # a proxy's user name can hold neither '@' nor ':', so it is never an email nor a provider's key
    with pytest.raises(IdentityRefused, match="holds a ':'"):
        named(one.user)
    # an email never holds a ':' either
    with pytest.raises(IdentityRefused, match="is not an email address"):
        from_claims(_verified(f"oidc:{ISSUER}#x@acme.test"))
    with pytest.raises(IdentityRefused, match="names no issuer"):
        from_claims({"sub": "s-1", "email": ALICE, "email_verified": True})  # no issuer at all


def test_people_of_a_public_mail_domain_share_no_team() -> None:
    ann = from_claims(_verified("ann@gmail.com"), team_domains=TEAMS)
    ben = from_claims(_verified("ben@gmail.com"), team_domains=TEAMS)
    assert ann.team != ben.team and {ann.team, ben.team} == {"person:ann@gmail.com", "person:ben@gmail.com"}


def test_nobody_joins_a_team_of_one_by_naming_it() -> None:
    with pytest.raises(IdentityRefused, match="starts with 'person:'"):
        from_claims(_verified("eve@other.test", org=f"person:{ALICE}"), team_claim="org")
    with pytest.raises(IdentityRefused, match="starts with 'person:'"):
        from_headers({"X-User": ["eve@other.test"], "X-Team": [f"person:{ALICE}"]}, "X-User", "X-Team")


def test_a_person_named_in_several_teams_is_refused_rather_than_put_in_one() -> None:
    with pytest.raises(IdentityRefused, match="names 2 teams for you in its 'groups' claim"):
        from_claims(_verified(ALICE, groups=["vision", "audio"]), team_claim="groups")


def test_an_emails_case_does_not_make_another_person() -> None:
    spellings = ("alice@acme.test", "Alice@acme.test", "ALICE@ACME.TEST", "alice@Acme.Test")
    assert {from_claims(_verified(e)).user for e in spellings} == {ALICE}
    assert {from_headers({"X-User": [e]}, "X-User").user for e in spellings} == {ALICE}


# Invisible, format, control, private-use, unassigned characters, separators and unusual spaces
HIDDEN = [
    "\u200b",  # zero width space (Cf)
    "\u200c",  # zero width non-joiner
    "\u200d",  # zero width joiner
    "\u2060",  # word joiner
    "\ufeff",  # byte order mark
    "\u00ad",  # soft hyphen
    "\u200e",  # left-to-right mark
    "\u200f",  # right-to-left mark
    "\u202e",  # right-to-left override
    "\u2066",  # left-to-right isolate
    "\u180e",  # Mongolian vowel separator
    "\U000e0041",  # tag latin capital A
    "\x00",
    "\x1b",
    "\x7f",
    "\x85",  # next line (Cc)
    "\t",
    "\n",
    "\u2028",  # line separator (Zl)
    "\u2029",  # paragraph separator (Zp)
    "\ue000",  # private use (Co)
    "\ud800",  # a lone surrogate (Cs)
    "\u0378",  # unassigned (Cn)
    "\u00a0",  # no-break space
    "\u2003",  # em space
    "\u3000",  # ideographic space
    "\u1680",  # ogham space mark
]


@pytest.mark.parametrize("ch", HIDDEN, ids=[f"U+{ord(c):04X}" for c in HIDDEN])
def test_a_hidden_character_anywhere_in_an_identity_is_refused_and_named(ch: str) -> None:
    named_as = rf"U\+{ord(ch):04X}"
    for where in (f"{ch}alice@acme.test", f"ali{ch}ce@acme.test", f"alice@acme.test{ch}"):
        with pytest.raises(IdentityRefused, match=named_as):
            from_claims(_verified(where))
        with pytest.raises(IdentityRefused, match=named_as):
            from_headers({"X-Forwarded-Email": [where]}, "X-Forwarded-Email")
    with pytest.raises(IdentityRefused, match=named_as):
        from_claims(_oidc(sub=f"s{ch}1"))
    with pytest.raises(IdentityRefused, match=named_as):
        from_claims(_verified(ALICE, org=f"ac{ch}me"), team_claim="org")
    with pytest.raises(IdentityRefused, match=named_as):
        from_headers({"X-User": [ALICE], "X-Team": [f"ac{ch}me"]}, "X-User", "X-Team")


def test_every_character_category_the_policy_names_is_in_the_cases() -> None:
    assert {"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp", "Zs"} <= {unicodedata.category(c) for c in HIDDEN}


def test_two_spellings_of_one_letter_are_refused_rather_than_made_two_people() -> None:
    composed, decomposed = "jos\u00e9@acme.test", "jose\u0301@acme.test"
    assert from_claims(_verified(composed)).user == composed
    with pytest.raises(IdentityRefused, match="composed form"):
        from_claims(_verified(decomposed))


def test_an_identity_over_the_limit_is_refused_never_cut_into_another() -> None:
    domain = "@acme.test"
    longest = "a" * (MAX_LENGTH - len(domain)) + domain
    assert from_claims(_verified(longest)).user == longest
    for longer in (longest + "x", "a" * (MAX_LENGTH - len(domain)) + "b" + domain):  # two that a cut would merge
        with pytest.raises(IdentityRefused, match=f"over the limit of {MAX_LENGTH}"):
            from_claims(_verified(longer))
    with pytest.raises(IdentityRefused, match=f"over the limit of {MAX_LENGTH}"):
        from_headers({"X-User": ["u" * (MAX_LENGTH + 1)]}, "X-User")
    with pytest.raises(IdentityRefused, match=f"over {MAX_LENGTH} characters"):
        from_claims(_oidc(sub="s" * (MAX_LENGTH - 10)))  # the subject fits, with the issuer it does not


def test_a_proxy_header_sent_twice_is_refused_whichever_comes_first() -> None:
    for values in (["mallory@evil.test", ALICE], [ALICE, "mallory@evil.test"], [ALICE, ALICE]):
        with pytest.raises(IdentityRefused, match="X-Forwarded-Email header arrived 2 times"):
            from_headers({"x-forwarded-email": values}, "X-Forwarded-Email")
    with pytest.raises(IdentityRefused, match="arrived 2 times"):  # the same header under two spellings
        from_headers({"X-Forwarded-Email": [ALICE], "x-forwarded-email": [ALICE]}, "X-Forwarded-Email")
    with pytest.raises(IdentityRefused, match="X-Team header arrived 2 times"):
        from_headers({"X-User": [ALICE], "X-Team": ["acme", "eve"]}, "X-User", "X-Team")


def test_a_proxy_header_holding_a_list_is_refused() -> None:
    with pytest.raises(IdentityRefused, match=r"holds a list"):
        from_headers({"X-Forwarded-Email": ["mallory@evil.test, alice@acme.test"]}, "X-Forwarded-Email", "", TEAMS)
    with pytest.raises(IdentityRefused, match=r"holds a list"):
        from_headers({"X-User": [ALICE], "X-Team": ["acme,eve"]}, "X-User", "X-Team")


def test_a_proxy_name_is_refused_with_a_space_or_a_malformed_address() -> None:
    for given in (
        " alice",
        "alice smith",
        "alice@",
        "@acme.test",
        "a@b@c.test",
        '"alice"@acme.test',
        "alice@acme..test",
    ):
        with pytest.raises(IdentityRefused):
            from_headers({"X-User": [given]}, "X-User")


def test_the_command_line_refuses_an_owner_before_measuring_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    done = cli("bench", "sample:tinycnn", "--owner", "ali\u200bce@acme.test")
    assert done.returncode == 2 and "U+200B ZERO WIDTH SPACE" in done.stderr, done.stderr
    done = cli("bench", "sample:tinycnn", "--team", "acme")
    assert done.returncode == 2 and "give --owner too" in done.stderr
    assert not (tmp_path / "history.sqlite").exists()


# A letter with a pile of combining marks spills over the room board's labels: one letter and 39 marks fit in 40
MARK_PILES = [
    "Z" + "\u0301" * 39,  # combining acute accent (Mn)
    "A\u20dd\u20dd\u20dd",  # combining enclosing circle (Me)
    "A\u034f\u034f\u034f",  # combining grapheme joiner (Mn, though its combining class is 0)
    "Nguye\u0302\u0303\u0301n",  # three marks on one e
    "Nguy\u1ec5\u0301n",  # ễ (two marks, precomposed) and one more
    "\u0301\u0301\u0301Ada",  # marks with no letter under them
]


@pytest.mark.parametrize("name", MARK_PILES, ids=range(len(MARK_PILES)))
def test_a_display_name_piling_marks_on_one_letter_is_refused_not_cleaned(name: str) -> None:
    with pytest.raises(RoomError, match="at most 2 accents or other marks on one letter"):
        clean_name(name)


def test_names_with_their_own_accents_join_as_typed() -> None:
    for name in ("Nguyễn Thị Ánh", "Nguye\u0323\u0302n", "José", "Jose\u0301", "Zoë", "ที่นี่", "क्षिति", "王老五"):
        assert clean_name(name) == name  # never normalised, never cleaned


# What the pages call the one who runs the room (the Classroom page, the join form's errors), in both languages
TEACHERS = ["Teacher", "teacher", "TEACHER", "Ｔｅａｃｈｅｒ", "The teacher", "t-e-a-c-h-e-r", "Te\u0301acher",
            "Facilitator", "ｆａｃｉｌｉｔａｔｏｒ", "老师", "讲师", "老 师", "讲师！"]  # fmt: skip


@pytest.mark.parametrize("name", TEACHERS)
def test_no_participant_takes_the_name_the_pages_give_the_teacher(name: str) -> None:
    with pytest.raises(RoomError, match="what the pages call the teacher"):
        clean_name(name)
    with using("zh"), pytest.raises(RoomError, match="是页面对讲师的称呼"):
        clean_name(name)


def test_a_name_of_ones_own_that_holds_the_word_is_ones_own() -> None:
    for name in ("Teacher's pet", "Teachers", "Thea", "老师傅", "The"):
        assert clean_name(name) == name
