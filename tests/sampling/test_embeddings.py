"""Pure tests of vector loading and validation: no database."""

import tracemalloc

import numpy as np
import pytest

from sampling.embeddings import (
    EmbeddingError,
    check_rows_match_ids,
    load_vectors,
    open_space,
    read_ids,
    write_ids,
    write_normalized,
)


def _save(tmp_path, array, name="v.npy"):
    path = tmp_path / name
    np.save(path, array)
    return path


def test_load_vectors_accepts_2d_float(tmp_path):
    path = _save(tmp_path, np.ones((3, 4), dtype=np.float64))
    assert load_vectors(path).shape == (3, 4)


@pytest.mark.parametrize(
    ("array", "message"),
    [
        (np.ones((3,), dtype=np.float32), "expected a 2-D array"),
        (np.ones((2, 3, 4), dtype=np.float32), "expected a 2-D array"),
        (np.ones((3, 4), dtype=np.int64), "expected floating point"),
        (np.ones((0, 4), dtype=np.float32), "empty array"),
    ],
)
def test_load_vectors_rejects_bad_arrays(tmp_path, array, message):
    path = _save(tmp_path, array)
    with pytest.raises(EmbeddingError, match=message) as info:
        load_vectors(path)
    assert str(path) in str(info.value)


def test_load_vectors_rejects_non_npy(tmp_path):
    path = tmp_path / "v.npy"
    path.write_text("not numpy")
    with pytest.raises(EmbeddingError, match="not a readable .npy"):
        load_vectors(path)


def test_load_vectors_missing_file(tmp_path):
    with pytest.raises(EmbeddingError, match="not found"):
        load_vectors(tmp_path / "absent.npy")


def test_read_ids_rejects_duplicates_with_line_numbers(tmp_path):
    path = tmp_path / "ids.txt"
    path.write_text("a\nb\na\n")
    with pytest.raises(EmbeddingError, match=r"duplicate id 'a' on lines 1 and 3"):
        read_ids(path)


def test_read_ids_rejects_blank_line(tmp_path):
    path = tmp_path / "ids.txt"
    path.write_text("a\n\nb\n")
    with pytest.raises(EmbeddingError, match="line 2 is empty"):
        read_ids(path)


def test_read_ids_refuses_a_line_longer_than_any_key_without_reading_the_rest(tmp_path):
    """A 40 MB ids file without a line break is refused at its first 4 KiB."""
    path = tmp_path / "ids.txt"
    with path.open("wb") as out:
        out.write(b"a\n")
        for _ in range(40):
            out.write(b"x" * 2**20)
    tracemalloc.start()
    try:
        with pytest.raises(EmbeddingError, match="line 2 is longer than 4,096 bytes; an ids file has one item key"):
            read_ids(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20


def test_rows_must_match_ids():
    with pytest.raises(EmbeddingError, match="has 3 rows but ids.txt has 2 ids"):
        check_rows_match_ids(np.ones((3, 2)), ["a", "b"], "v.npy", "ids.txt")


def test_write_normalized_makes_unit_float32_rows(tmp_path):
    vectors = np.array([[3.0, 4.0], [0.0, -2.0], [1.0, 1.0]])
    out = tmp_path / "space.npy"
    write_normalized(vectors, ["a", "b", "c"], out)
    stored = np.load(out)
    assert stored.dtype == np.float32
    np.testing.assert_allclose(stored, [[0.6, 0.8], [0.0, -1.0], [2**-0.5, 2**-0.5]], rtol=1e-6)


@pytest.mark.parametrize(
    ("bad_value", "message"), [(np.nan, "NaN or infinite"), (np.inf, "NaN or infinite"), (0.0, "all zeros")]
)
def test_write_normalized_names_the_bad_row_and_leaves_no_file(tmp_path, bad_value, message):
    vectors = np.ones((5, 3))
    vectors[3] = bad_value if bad_value == 0.0 else [1.0, bad_value, 1.0]
    out = tmp_path / "space.npy"
    with pytest.raises(EmbeddingError, match=rf"row 3 \(id 'd'\) .*{message}"):
        write_normalized(vectors, list("abcde"), out)
    assert list(tmp_path.iterdir()) == []


def test_write_normalized_handles_many_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr("sampling.embeddings.CHUNK_ROWS", 7)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(50, 8))
    out = tmp_path / "space.npy"
    write_normalized(vectors, [str(i) for i in range(50)], out)
    np.testing.assert_allclose(np.linalg.norm(np.load(out), axis=1), 1.0, rtol=1e-6)
    expected = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    np.testing.assert_allclose(np.load(out), expected, rtol=1e-5)


def test_open_space_round_trip(tmp_path):
    write_normalized(np.eye(3), ["x", "y", "z"], tmp_path / "s.npy")
    write_ids(["x", "y", "z"], tmp_path / "s.ids.txt")
    vectors, ids = open_space(tmp_path / "s.npy", tmp_path / "s.ids.txt")
    assert ids == ["x", "y", "z"]
    assert isinstance(vectors, np.memmap)
