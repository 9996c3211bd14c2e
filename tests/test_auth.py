"""Seat tokens: bound to one match and one seat, and any tampering is caught."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.runtime.auth import bearer_token, issue_token, new_match_id, seat_from_token
from services.runtime.errors import PermissionDenied, Unauthenticated

SECRET = b"0123456789abcdef0123"
match_ids = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", min_size=1, max_size=30
)


@given(match_ids, st.integers(min_value=0, max_value=5))
def test_a_token_grants_its_own_seat_in_its_own_match(match_id, seat):
    assert seat_from_token(SECRET, issue_token(SECRET, match_id, seat), match_id) == seat


@given(match_ids, st.integers(min_value=0, max_value=5), st.data())
def test_any_changed_character_is_refused(match_id, seat, data):
    token = issue_token(SECRET, match_id, seat)
    index = data.draw(st.integers(min_value=0, max_value=len(token) - 1))
    replacement = data.draw(st.sampled_from("aZ09-_.x"))
    tampered = token[:index] + replacement + token[index + 1 :]
    if tampered == token:
        return
    with pytest.raises((Unauthenticated, PermissionDenied)):
        seat_from_token(SECRET, tampered, match_id)


def test_a_token_for_another_match_is_permission_denied():
    token = issue_token(SECRET, "match-a", 0)
    with pytest.raises(PermissionDenied):
        seat_from_token(SECRET, token, "match-b")


def test_a_token_signed_with_another_secret_is_unauthenticated():
    token = issue_token(b"another-secret-0000", "m", 1)
    with pytest.raises(Unauthenticated):
        seat_from_token(SECRET, token, "m")


def test_match_ids_are_long_and_distinct():
    ids = {new_match_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(len(i) >= 22 for i in ids)


def test_bearer_header_parsing():
    assert bearer_token((("authorization", "Bearer abc"),)) == "abc"
    assert bearer_token((("x-other", "1"),)) is None
    with pytest.raises(Unauthenticated):
        bearer_token((("authorization", "Basic abc"),))
