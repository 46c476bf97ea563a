"""Load, validate and store embedding vectors. Pure numpy, no Django.

Stored form: ``float32 (n, d)``, every row L2-normalized, as a ``.npy`` file opened
with mmap, plus a keys file with one item key per line in row order.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from annotation.core.inputs import nul_problem

# Rows processed at a time while validating and normalizing: keeps memory flat for
# files much larger than RAM would comfortably hold twice.
CHUNK_ROWS = 65_536
# An item key has at most 255 characters (up to 4 bytes each in UTF-8): a longer line is
# no id, and a file without line breaks is refused here instead of read whole.
MAX_ID_LINE_BYTES = 4096


class EmbeddingError(ValueError):
    """Bad vectors or ids. The message names the file and the row or id."""


def load_vectors(path: str | os.PathLike) -> np.ndarray:
    """Open a ``.npy`` file read-only with mmap. Returns a 2-D floating array (n, d).

    Raises EmbeddingError naming the file if it is missing, not a .npy file, not 2-D,
    not floating point, or empty.
    """
    path = Path(path)
    if not path.is_file():
        raise EmbeddingError(f"{path}: vectors file not found")
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise EmbeddingError(f"{path}: not a readable .npy array ({exc})") from exc
    if not isinstance(array, np.ndarray):
        raise EmbeddingError(f"{path}: holds an archive, not a single array")
    if array.ndim != 2:
        raise EmbeddingError(f"{path}: expected a 2-D array (rows, dims), got shape {array.shape}")
    if not np.issubdtype(array.dtype, np.floating):
        raise EmbeddingError(f"{path}: expected floating point vectors, got dtype {array.dtype}")
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise EmbeddingError(f"{path}: empty array of shape {array.shape}")
    return array


def read_ids(path: str | os.PathLike) -> list[str]:
    """Read one id per line (UTF-8 text; lines end in \\n, \\r\\n or \\r). Raises
    EmbeddingError naming the file and the line (1-based) of a blank line, a duplicate id
    or an id with a NUL character, and the byte offset of a byte that is not UTF-8.

    Streams the file a line at a time, each line bounded (MAX_ID_LINE_BYTES): an ids file
    may be as large as its upload limit."""
    path = Path(path)
    if not path.is_file():
        raise EmbeddingError(f"{path}: ids file not found")
    ids: list[str] = []
    first_line: dict[str, int] = {}
    for line_no, key in enumerate(_id_lines(path), start=1):
        if not key:
            raise EmbeddingError(f"{path}: line {line_no} is empty; every row needs an id")
        problem = nul_problem(key)
        if problem:
            raise EmbeddingError(f"{path}: the id on line {line_no} {problem}")
        if key in first_line:
            raise EmbeddingError(f"{path}: duplicate id {key!r} on lines {first_line[key]} and {line_no}")
        first_line[key] = line_no
        ids.append(key)
    if not ids:
        raise EmbeddingError(f"{path}: no ids")
    return ids


def _id_lines(path: Path) -> Iterator[str]:
    """The file's lines, stripped, split at \\n, \\r\\n and a lone \\r as text mode does."""
    offset = 0
    with path.open("rb") as stream:
        for newline_count, raw in enumerate(iter(lambda: stream.readline(MAX_ID_LINE_BYTES + 1), b"")):
            if len(raw) > MAX_ID_LINE_BYTES:
                raise EmbeddingError(
                    f"{path}: line {newline_count + 1} is longer than {MAX_ID_LINE_BYTES:,} bytes; "
                    "an ids file has one item key per line"
                )
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                at = offset + exc.start
                raise EmbeddingError(
                    f"{path}: not UTF-8 text: byte 0x{raw[exc.start]:02x} at byte offset {at:,} "
                    f"(line {newline_count + 1})"
                ) from None
            offset += len(raw)
            text = text.removesuffix("\n").removesuffix("\r")
            for part in text.split("\r"):
                yield part.strip()


def check_rows_match_ids(vectors: np.ndarray, ids: list[str], vectors_name: str, ids_name: str) -> None:
    if vectors.shape[0] != len(ids):
        raise EmbeddingError(
            f"{vectors_name} has {vectors.shape[0]} rows but {ids_name} has {len(ids)} ids; they must match row for row"
        )


def write_normalized(vectors: np.ndarray, ids: list[str], out_path: str | os.PathLike) -> None:
    """Validate every row and write L2-normalized float32 vectors to ``out_path``.

    Rows must be finite and non-zero; the first bad row is reported with its index and
    id. The file appears under its final name only when complete (write to a temporary
    file in the same folder, then rename), so a failure leaves nothing behind.
    """
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    n, d = vectors.shape
    fd, tmp_name = tempfile.mkstemp(prefix=out_path.name + ".", suffix=".tmp", dir=out_path.parent)
    os.close(fd)
    try:
        out = np.lib.format.open_memmap(tmp_name, mode="w+", dtype=np.float32, shape=(n, d))
        for start in range(0, n, CHUNK_ROWS):
            chunk = np.asarray(vectors[start : start + CHUNK_ROWS], dtype=np.float64)
            finite = np.isfinite(chunk).all(axis=1)
            if not finite.all():
                row = start + int(np.argmin(finite))
                raise EmbeddingError(f"row {row} (id {ids[row]!r}) has a NaN or infinite value")
            norms = np.linalg.norm(chunk, axis=1)
            if not (norms > 0).all():
                row = start + int(np.argmin(norms > 0))
                raise EmbeddingError(f"row {row} (id {ids[row]!r}) is all zeros and has no direction")
            out[start : start + CHUNK_ROWS] = (chunk / norms[:, None]).astype(np.float32)
        out.flush()
        del out
        # mkstemp creates the file private; stored spaces are read by the web and worker users.
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, out_path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def write_ids(ids: list[str], out_path: str | os.PathLike) -> None:
    """Write keys one per line, atomically."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.name + ".tmp")
    tmp.write_text("".join(f"{key}\n" for key in ids), encoding="utf-8")
    os.replace(tmp, out_path)


def open_space(vectors_path: str | os.PathLike, ids_path: str | os.PathLike) -> tuple[np.ndarray, list[str]]:
    """Open a stored space: ``float32 (n, d)`` L2-normalized (mmap) and its keys."""
    vectors = np.load(vectors_path, mmap_mode="r", allow_pickle=False)
    ids = Path(ids_path).read_text(encoding="utf-8").splitlines()
    return vectors, ids
