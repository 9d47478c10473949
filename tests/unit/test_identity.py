"""Sign-in settings are checked at start, and who someone is (and their team) follows from claims or headers."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.identity import ANONYMOUS, Identity, from_claims, from_headers, team_of
from core.settings import load_settings


def _load(tmp_path: Path, **env: str):  # type: ignore[no-untyped-def]
    return load_settings(environ={f"WORKBENCH_{k.upper()}": v for k, v in env.items()}, secrets_path=tmp_path / "x")


def test_sign_in_is_off_unless_the_operator_turns_it_on(tmp_path: Path) -> None:
    settings = _load(tmp_path)
    assert settings.auth == "" and not settings.proxy_user_header
    assert load_settings(environ={"WORKBENCH_MODE": "hosted"}, secrets_path=tmp_path / "x").auth == ""


def test_auth_modes_are_read_from_secrets_toml_and_normalised(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets.toml"
    secrets.write_text('[workbench]\nauth = " OIDC "\nteam_claim = "org"\n')
    settings = load_settings(environ={}, secrets_path=secrets)
    assert settings.auth == "oidc" and settings.team_claim == "org"


def test_an_unknown_auth_mode_is_refused_with_the_ones_there_are(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"auth='saml'.*'oidc'.*'proxy'"):
        _load(tmp_path, auth="saml")


def test_proxy_mode_without_its_header_refuses_to_start_and_says_which_setting(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"proxy_user_header.*X-Forwarded-Email"):
        _load(tmp_path, auth="proxy")
    settings = _load(tmp_path, auth="proxy", proxy_user_header="X-Forwarded-Email")
    assert settings.auth == "proxy" and settings.proxy_user_header == "X-Forwarded-Email"


def test_the_team_is_the_email_domain() -> None:
    assert team_of("Alice@ACME.test ") == "acme.test"
    assert team_of("alice") == "" and team_of("alice@") == ""


def test_claims_give_email_name_and_domain_team() -> None:
    me = from_claims({"sub": "123", "email": "alice@acme.test", "name": "Alice Example"})
    assert me == Identity(user="alice@acme.test", name="Alice Example", team="acme.test")
    assert me.signed_in and me.label == "Alice Example"


def test_a_configured_team_claim_wins_and_its_absence_leaves_a_team_of_one() -> None:
    claims = {"sub": "123", "email": "alice@acme.test", "groups": ["vision", "audio"]}
    assert from_claims(claims, team_claim="groups").team == "vision"
    assert from_claims(claims, team_claim="org").team == "alice@acme.test"  # never the shared anonymous team


def test_without_email_the_subject_is_the_user_and_their_own_team() -> None:
    assert from_claims({"sub": "u-42"}) == Identity(user="u-42", name="u-42", team="u-42")
    assert from_claims({}) == ANONYMOUS


def test_proxy_headers_name_the_person_case_insensitively() -> None:
    headers = {"x-forwarded-email": "bob@acme.test", "X-Forwarded-Groups": "vision"}
    assert from_headers(headers, "X-Forwarded-Email") == Identity("bob@acme.test", "bob@acme.test", "acme.test")
    assert from_headers(headers, "X-Forwarded-Email", "X-Forwarded-Groups").team == "vision"
    assert from_headers({}, "X-Forwarded-Email") == ANONYMOUS
    assert from_headers(headers, "") == ANONYMOUS


def test_untrusted_text_loses_control_characters_and_is_cut_short() -> None:
    me = from_claims({"email": "eve@acme.test", "name": "Eve\n\x1b[31m" + "x" * 1000})
    assert "\n" not in me.name and "\x1b" not in me.name and len(me.name) <= 256
