"""The identity memo behind the codec's event messages and a table's parsed options."""

from __future__ import annotations

from services.runtime.by_identity import ByIdentity


def test_a_value_is_found_by_the_same_object_only():
    memo: ByIdentity[str] = ByIdentity(8)
    table, equal = {"turn_seconds": 5}, {"turn_seconds": 5}
    memo.put(table, "parsed")
    assert memo.get(table) == "parsed"
    assert memo.get(equal) is None  # equal, but another object


def test_a_full_memo_starts_again_rather_than_grow():
    memo: ByIdentity[int] = ByIdentity(2)
    keys = [{"n": n} for n in range(3)]
    for n, key in enumerate(keys):
        memo.put(key, n)
    assert memo.get(keys[2]) == 2
    assert memo.get(keys[0]) is None and memo.get(keys[1]) is None
