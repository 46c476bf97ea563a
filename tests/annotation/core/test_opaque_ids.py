"""The opaque ids raters see (annotation.core.opaque_ids): pure, no database."""

import hashlib
import hmac
import itertools
import random

import pytest

import annotation.core.opaque_ids as opaque_ids
from annotation.core.opaque_ids import ID_LIMIT, MEMO_LIMIT, OpaqueIds, _round_key, _round_value

KINDS = ("slot", "pair", "rating", "flag")


@pytest.fixture
def ids():
    return OpaqueIds(b"k" * 32, KINDS)


def test_round_trip_on_samples(ids):
    rng = random.Random(7)
    samples = [0, 1, 2, ID_LIMIT - 1, ID_LIMIT - 2, *range(1, 2000), *(rng.randrange(ID_LIMIT) for _ in range(2000))]
    for kind in KINDS:
        encoded = [ids.encode(kind, n) for n in samples]
        assert all(0 <= e < ID_LIMIT for e in encoded)
        assert [ids.decode(kind, e) for e in encoded] == samples
        # Injective on the samples: no two ids share an opaque id.
        assert len(set(encoded)) == len(set(samples))


def test_consecutive_ids_are_not_ordered(ids):
    encoded = [ids.encode("slot", n) for n in range(1, 201)]
    rises = sum(b > a for a, b in itertools.pairwise(encoded))
    # A random order rises about half the time; a monotone map 199 times.
    assert 60 < rises < 140
    assert encoded != sorted(encoded)
    # The ids of a small table spread over the whole 63-bit range.
    assert max(encoded) > ID_LIMIT // 2 > min(encoded)


def test_kinds_and_keys_give_unrelated_ids(ids):
    other_key = OpaqueIds(b"q" * 32, KINDS)
    for n in range(1, 50):
        assert ids.encode("slot", n) != ids.encode("pair", n)
        assert ids.encode("slot", n) != other_key.encode("slot", n)


def test_bad_input_is_refused(ids):
    for bad in (-1, ID_LIMIT, 2**64, 1.0, True, "5"):
        with pytest.raises(ValueError, match="whole number"):
            ids.encode("slot", bad)
        with pytest.raises(ValueError, match="whole number"):
            ids.decode("slot", bad)
    with pytest.raises(KeyError, match="no opaque ids of kind"):
        ids.encode("job", 1)
    # Equal keys of another type (True == 1 == 1.0) find no remembered id, either way.
    opaque = ids.encode("slot", 1)
    ids.decode("slot", 1)
    for bad in (True, 1.0):
        with pytest.raises(ValueError, match="whole number"):
            ids.encode("slot", bad)
        with pytest.raises(ValueError, match="whole number"):
            ids.decode("slot", bad)
    assert ids.decode("slot", opaque) == 1
    with pytest.raises(ValueError, match="16 bytes"):
        OpaqueIds(b"short", KINDS)


@pytest.mark.parametrize("key_length", [16, 63, 64, 65, 100])
def test_the_round_function_is_hmac_sha256_of_the_tweak_and_the_half(key_length):
    rng = random.Random(key_length)
    key = bytes(rng.randrange(256) for _ in range(key_length))
    for tweak in (b"slot\0" + b"0", b"rating\0" + b"5"):
        round_key = _round_key(key, tweak)
        for half in (0, 1, 2**32 - 1, rng.randrange(2**32)):
            mac = hmac.new(key, tweak + half.to_bytes(4, "big"), hashlib.sha256).digest()
            assert _round_value(round_key, half) == int.from_bytes(mac[:4], "big")


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        # Ids given out before the round function was computed from hashlib states: a
        # rater's page holding them across a deploy still submits to the same slots.
        (b"k" * 32, [7588037714873395823, 1677348169131018366, 2419849073975352642, 7945958334088154062]),
        (b"s" * 100, [3115298654220801416, 4545004914280374216, 1108711972696869509, 5535424999205500732]),
    ],
)
def test_ids_are_the_ones_given_out_before(key, expected):
    ids = OpaqueIds(key, KINDS)
    assert [ids.encode(kind, n) for kind in ("slot", "rating") for n in (1, 123456789)] == expected


def test_ids_met_lately_are_remembered_both_ways(monkeypatch):
    computed = []
    permute, unpermute = opaque_ids._permute, opaque_ids._unpermute
    monkeypatch.setattr(opaque_ids, "_permute", lambda rounds, v: computed.append(v) or permute(rounds, v))
    monkeypatch.setattr(opaque_ids, "_unpermute", lambda rounds, v: computed.append(v) or unpermute(rounds, v))
    fresh, remembering = OpaqueIds(b"k" * 32, KINDS), OpaqueIds(b"k" * 32, KINDS)
    expected = {(kind, n): fresh.encode(kind, n) for kind in KINDS for n in (1, 2, 123456789)}
    for (kind, n), opaque in expected.items():
        assert remembering.encode(kind, n) == opaque
    computed.clear()
    # An id given out, and the opaque id a rater sends back, cost no permutation again.
    for (kind, n), opaque in expected.items():
        assert remembering.encode(kind, n) == opaque
        assert remembering.decode(kind, opaque) == n
    assert computed == []
    # An opaque id decoded first is then encoded from memory; another kind is not.
    opaque = fresh.encode("pair", 77)
    assert remembering.decode("pair", opaque) == 77
    computed.clear()
    assert remembering.encode("pair", 77) == opaque
    assert computed == []
    assert remembering.encode("rating", 77) == fresh.encode("rating", 77)
    assert computed != []


def test_the_memory_of_ids_stays_bounded():
    ids = OpaqueIds(b"k" * 32, KINDS)
    fresh = OpaqueIds(b"k" * 32, KINDS)
    for n in range(MEMO_LIMIT + 100):
        ids.encode("slot", n)
        assert len(ids._encoded) <= MEMO_LIMIT and len(ids._decoded) <= MEMO_LIMIT
    # Emptied when full, then filled again: still the same ids.
    assert len(ids._encoded) == 100
    for n in (0, MEMO_LIMIT + 99):
        assert ids.encode("slot", n) == fresh.encode("slot", n)


def test_the_ids_raters_hold_stay_what_they_were_for_a_secret_key():
    """The key of the ids raters see is derived from SECRET_KEY with a fixed salt: a rater's
    open page, an API client's slot id and a list cursor made before an upgrade still name
    the same rows after it (the values as the ids were first made)."""
    from annotation.apis.fields import _rater_ids

    ids = _rater_ids("a fixed secret for the test")
    made = [str(ids.encode(kind, number)) for kind, number in [("slot", 1), ("pair", 2), ("rating", 3)]]
    assert made == ["7832400877230521882", "3267973460392830042", "7453892982258746652"]
