"""The opaque ids raters see (annotation.opaque_ids): pure, no database."""

import itertools
import random

import pytest

from annotation.opaque_ids import ID_LIMIT, OpaqueIds

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
    with pytest.raises(ValueError, match="16 bytes"):
        OpaqueIds(b"short", KINDS)
