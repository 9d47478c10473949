"""Sign-in settings are checked at start, and who someone is (and their team) follows from claims or headers.

The hostile cases (forged, merged or hidden identities) are in tests/adversarial/test_identities.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import IdentityRefused
from core.identity import ANONYMOUS, Identity, domain_teams, from_claims, from_headers, stored_owner
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


ISSUER = "https://idp.example"


def _claims(**claims: object) -> dict[str, object]:
    return {"iss": ISSUER, "sub": "u-42", **claims}


def test_a_verified_email_is_the_person_in_lower_case_and_the_domain_map_gives_the_team() -> None:
    teams = domain_teams("acme.test=acme, acme.org=acme, beta.test")
    me = from_claims(_claims(email="Alice@ACME.test", email_verified=True, name="Alice Example"), team_domains=teams)
    assert me == Identity(user="alice@acme.test", name="Alice Example", team="acme")
    assert me.signed_in and me.label == "Alice Example" and not me.alone
    assert from_claims(_claims(email="carol@acme.org", email_verified=True), team_domains=teams).team == "acme"
    assert from_claims(_claims(email="dan@beta.test", email_verified="true"), team_domains=teams).team == "beta.test"


def test_without_a_team_claim_or_a_mapped_domain_each_person_is_a_team_of_one() -> None:
    ann = from_claims(_claims(email="ann@gmail.com", email_verified=True))
    ben = from_claims(_claims(email="ben@gmail.com", email_verified=True))
    assert ann.team == "person:ann@gmail.com" and ann.alone and not ANONYMOUS.alone
    assert ann.team != ben.team


def test_a_configured_team_claim_wins_over_the_map_and_its_absence_falls_back_to_it() -> None:
    teams = {"acme.test": "acme"}
    claims = _claims(email="alice@acme.test", email_verified=True, groups=["vision"], org="Vision Lab")
    assert from_claims(claims, team_claim="groups", team_domains=teams).team == "vision"  # a list of one
    assert from_claims(claims, team_claim="org", team_domains=teams).team == "Vision Lab"
    assert from_claims(claims, team_claim="department", team_domains=teams).team == "acme"
    assert from_claims(claims, team_claim="department").team == "person:alice@acme.test"  # never the anonymous ""


def test_without_an_email_the_issuer_and_subject_are_the_key() -> None:
    me = from_claims(_claims(sub="u-42", name="U"))
    assert me == Identity(user=f"oidc:{ISSUER}#u-42", name="U", team=f"person:oidc:{ISSUER}#u-42")
    assert from_claims(_claims(sub="u-42"), team_claim="org").label == f"oidc:{ISSUER}#u-42"


def test_a_provider_the_operator_trusts_is_believed_when_it_does_not_say_but_never_when_it_says_no() -> None:
    trusted = {ISSUER}
    assert from_claims(_claims(email="eve@acme.test"), trusted_issuers=trusted).user == "eve@acme.test"
    with pytest.raises(IdentityRefused, match="says it is not verified"):
        from_claims(_claims(email="eve@acme.test", email_verified=False), trusted_issuers=trusted)
    with pytest.raises(IdentityRefused, match="oidc_trusted_issuers"):
        from_claims(_claims(email="eve@acme.test"), trusted_issuers={"https://other.example"})


def test_proxy_headers_name_the_person_case_insensitively_with_the_team_header_or_the_map() -> None:
    headers = {"x-forwarded-email": ["Bob@Acme.test"], "X-Forwarded-Groups": ["vision"]}
    teams = {"acme.test": "acme"}
    bob = from_headers(headers, "X-Forwarded-Email", team_domains=teams)
    assert bob == Identity("bob@acme.test", "", "acme") and bob.label == "bob@acme.test"
    assert from_headers(headers, "X-Forwarded-Email", "X-Forwarded-Groups", teams).team == "vision"
    assert from_headers({"Remote-User": ["jdoe"]}, "remote-user").team == "person:jdoe"  # a user name, alone
    assert from_headers({}, "X-Forwarded-Email") == ANONYMOUS
    assert from_headers({"X-Forwarded-Email": [""]}, "X-Forwarded-Email") == ANONYMOUS
    assert from_headers(headers, "") == ANONYMOUS


def test_a_display_name_that_cannot_be_shown_plainly_is_left_out_and_the_person_still_signs_in() -> None:
    me = from_claims(_claims(email="eve@acme.test", email_verified=True, name="Eve\u202e" + "x" * 10))
    assert (me.user, me.name, me.label) == ("eve@acme.test", "", "eve@acme.test")


def test_the_team_map_setting_is_checked_at_start_and_refuses_public_mail_domains(tmp_path: Path) -> None:
    settings = _load(
        tmp_path, team_domains=" Acme.test = acme , beta.test", oidc_trusted_issuers="https://a, https://b"
    )
    assert settings.teams_by_domain == {"acme.test": "acme", "beta.test": "beta.test"}
    assert settings.trusted_issuers == {"https://a", "https://b"}
    for given, refusal in (
        ("gmail.com=everyone", "gmail.com is a public mail domain"),
        ("acme.test=a, acme.test=b", "acme.test is given two teams"),
        ("not a domain=x", "does not start with a mail domain"),
        ("acme.test=person:alice@acme.test", "starts with 'person:'"),
        ("acme.test=ac\u200bme", "U\\+200B ZERO WIDTH SPACE"),
    ):
        with pytest.raises(ValueError, match=refusal):
            _load(tmp_path, team_domains=given)


def test_owners_an_earlier_version_stored_are_keyed_as_now() -> None:
    assert stored_owner("Alice@ACME.test") == "alice@acme.test"
    assert stored_owner("JDoe") == "JDoe" and stored_owner("") == ""
    assert stored_owner(f"oidc:{ISSUER}#Sub@X") == f"oidc:{ISSUER}#Sub@X"  # a subject keeps its case
