"""Seat tokens: bound to one match, one seat and one token generation, until they expire;
any tampering is caught."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.runtime.auth import bearer_token, grant_from_token, issue_token, new_match_id, seat_from_token
from services.runtime.errors import PermissionDenied, Unauthenticated

SECRET = b"0123456789abcdef0123"
NOW_MS = 1_800_000_000_000
LATER_MS = NOW_MS + 3_600_000
match_ids = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", min_size=1, max_size=30
)


@settings(deadline=None)
@given(match_ids, st.integers(min_value=0, max_value=5), st.integers(min_value=0, max_value=10**6))
def test_a_token_grants_its_own_seat_and_generation_in_its_own_match(match_id, seat, generation):
    token = issue_token(SECRET, match_id, seat, generation, LATER_MS)
    grant = grant_from_token(SECRET, token, match_id, NOW_MS)
    assert (grant.seat, grant.generation, grant.expires_ms) == (seat, generation, LATER_MS)


# No deadline: the machine is shared, and these checks are about outcomes, not speed.
@settings(deadline=None)
@given(match_ids, st.integers(min_value=0, max_value=5), st.data())
def test_any_changed_character_is_refused(match_id, seat, data):
    token = issue_token(SECRET, match_id, seat, 1, LATER_MS)
    index = data.draw(st.integers(min_value=0, max_value=len(token) - 1))
    replacement = data.draw(st.sampled_from("aZ09-_.x"))
    tampered = token[:index] + replacement + token[index + 1 :]
    if tampered == token:
        return
    with pytest.raises((Unauthenticated, PermissionDenied)):
        seat_from_token(SECRET, tampered, match_id, NOW_MS)


def test_an_expired_token_is_refused_and_says_so():
    token = issue_token(SECRET, "m", 0, 1, NOW_MS)
    with pytest.raises(Unauthenticated) as refused:
        seat_from_token(SECRET, token, "m", NOW_MS)
    assert refused.value.reason == "token_expired"
    assert "expired" in refused.value.message and "RejoinMatch" in refused.value.message
    assert seat_from_token(SECRET, token, "m", NOW_MS - 1) == 0


def test_a_token_for_another_match_is_permission_denied():
    token = issue_token(SECRET, "match-a", 0, 1, LATER_MS)
    with pytest.raises(PermissionDenied):
        seat_from_token(SECRET, token, "match-b", NOW_MS)


def test_a_token_signed_with_another_secret_is_unauthenticated():
    token = issue_token(b"another-secret-0000", "m", 1, 1, LATER_MS)
    with pytest.raises(Unauthenticated):
        seat_from_token(SECRET, token, "m", NOW_MS)


def test_an_old_format_token_is_malformed():
    with pytest.raises(Unauthenticated) as refused:
        seat_from_token(SECRET, "v1.m.0.c2lnbmF0dXJl", "m", NOW_MS)
    assert "malformed" in refused.value.message


def test_match_ids_are_long_and_distinct():
    ids = {new_match_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(len(i) >= 22 for i in ids)


def test_bearer_header_parsing():
    assert bearer_token((("authorization", "Bearer abc"),)) == "abc"
    assert bearer_token((("x-other", "1"),)) is None
    with pytest.raises(Unauthenticated):
        bearer_token((("authorization", "Basic abc"),))
