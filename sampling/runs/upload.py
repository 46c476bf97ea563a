"""An uploaded pair list read as a stream (``sampling.methods.pairlist``), a chunk of rows
at a time: each chunk's methods checked against the list's kind, its ids looked up in the
split in one query per item table, its pairs made into specs and its repeats found by
their item ids. Memory holds one chunk and the pairs seen so far (two item ids and a
line each: 24 bytes), whatever the file's size; the first problem raises
PairListError naming its line, having read no further.

The upload's check (``upload_check``, in the request that stores the file) and the
batch's run (``upload_spec_chunks``, which writes each chunk as it comes, in one
transaction) read the file the same way."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from annotation.models import METHOD_KIND, Caption, Image, TaskKind
from annotation.serving.pairs import PairSpec
from sampling.errors import PairListError
from sampling.methods import strategies
from sampling.methods.pairlist import CHUNK_ROWS, UPLOADED, PairListFormatError, PairRow, Repeats, pair_list_open
from sampling.selectors import KEY_CHUNK


@dataclass
class UploadSummary:
    """What reading a list found: its ``kind``, the pairs kept per method (``counts``),
    and the rows merged as repeats."""

    kind: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    merged: int = 0

    @property
    def pairs(self) -> int:
        return sum(self.counts.values())


def upload_check(split, path: str | Path, *, repeats: str) -> UploadSummary:
    """Read and check a whole pair list for ``split`` (see the module) without keeping
    its pairs. Raises PairListError naming the first problem."""
    summary = UploadSummary()
    for _specs in upload_spec_chunks(split, path, repeats=repeats, summary=summary):
        pass
    return summary


def upload_spec_chunks(
    split, path: str | Path, *, repeats: str, summary: UploadSummary | None = None
) -> Iterator[list[PairSpec]]:
    """The list's pairs as specs, a chunk at a time, in the list's order and orientation,
    repeats left out (or refused); ``summary`` is filled as the chunks are read."""
    summary = summary if summary is not None else UploadSummary()
    try:
        with pair_list_open(path) as reader:
            summary.kind = reader.kind
            seen = Repeats(reader.name, repeats=repeats)
            for rows in reader.chunks(CHUNK_ROWS):
                specs = _specs(split, reader.name, reader.kind, rows, seen)
                summary.merged = seen.merged
                for spec in specs:
                    summary.counts[spec.sampling_method] = summary.counts.get(spec.sampling_method, 0) + 1
                yield specs
    except PairListFormatError as exc:
        raise PairListError(str(exc)) from exc


def _specs(split, name: str, kind: str, rows: list[PairRow], seen: Repeats) -> list[PairSpec]:
    for row in rows:
        if row.method == UPLOADED:
            continue
        if row.method not in METHOD_KIND:
            known = ", ".join([*strategies.METHODS, "empty"])
            raise PairListError(f"{name}: line {row.line}: unknown sampling_method {row.method!r}; use one of {known}")
        if METHOD_KIND[row.method] != kind:
            raise PairListError(
                f"{name}: line {row.line}: {row.method} makes {METHOD_KIND[row.method]} pairs, "
                f"but this is a {kind} list"
            )
    ids_a, ids_b = _ids(split, kind, rows)
    unknown = [
        (row.line, key) for row in rows for key, ids in ((row.key_a, ids_a), (row.key_b, ids_b)) if key not in ids
    ]
    if unknown:
        shown = "; ".join(f"line {line}: {key}" for line, key in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise PairListError(
            f"{name}: {len(unknown)} id(s) are not items of split {split}: {shown}{more} "
            f"(lines {rows[0].line} to {rows[-1].line}; the file was read no further)"
        )
    first, second = _identities(kind, rows, ids_a, ids_b)
    fresh = seen.first_rows(first, second, np.array([row.line for row in rows], dtype=np.int64))
    specs = []
    for row, keep in zip(rows, fresh.tolist(), strict=True):
        if not keep:
            continue
        a, b = ids_a[row.key_a], ids_b[row.key_b]
        if kind == TaskKind.SIS:
            specs.append(PairSpec(kind, row.method, image_a=a, image_b=b))
        elif kind == TaskKind.STS:
            specs.append(PairSpec(kind, row.method, caption_a=a, caption_b=b))
        else:
            specs.append(PairSpec(kind, row.method, caption_a=a, image_a=b))
    return specs


def _identities(kind: str, rows: list[PairRow], ids_a: dict, ids_b: dict) -> tuple[np.ndarray, np.ndarray]:
    """Each row's pair as two item ids: int64 (n,) each, the lower first for STS and SIS
    (either order of two captions or two images is one pair; SITS pairs are ordered)."""
    first = np.array([ids_a[row.key_a] for row in rows], dtype=np.int64)
    second = np.array([ids_b[row.key_b] for row in rows], dtype=np.int64)
    if kind == TaskKind.SITS:
        return first, second
    return np.minimum(first, second), np.maximum(first, second)


def _ids(split, kind: str, rows: list[PairRow]) -> tuple[dict[str, int], dict[str, int]]:
    """Key -> item id in ``split`` of the rows' first and second ids."""
    model_a = Image if kind == TaskKind.SIS else Caption
    model_b = Caption if kind == TaskKind.STS else Image
    if model_a is model_b:
        ids = _ids_in_split(split, model_a, [key for row in rows for key in (row.key_a, row.key_b)])
        return ids, ids
    return _ids_in_split(split, model_a, [row.key_a for row in rows]), _ids_in_split(
        split, model_b, [row.key_b for row in rows]
    )


def _ids_in_split(split, model, keys: list[str]) -> dict[str, int]:
    unique = sorted(set(keys))
    queryset = model.objects.filter(image__split=split) if model is Caption else model.objects.filter(split=split)
    found: dict[str, int] = {}
    for start in range(0, len(unique), KEY_CHUNK):
        found.update(queryset.filter(key__in=unique[start : start + KEY_CHUNK]).values_list("key", "id"))
    return found
