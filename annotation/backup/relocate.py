"""Stored paths after a restore into other folders. Rows name files by absolute path (an
embedding space's vectors and ids, a batch's uploaded pair list, a job's uploads and its
export or evaluation folder); when this installation's ``DATA_DIR`` or ``EXPORT_DIR`` is
not the one the backup was made with, each path under the old folder is rewritten to the
same place under the new one, so the restored rows find the restored files."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction

from annotation.models import EmbeddingSpace, Job
from sampling.models import SamplingBatch


def _moved(value, moves: list[tuple[str, str]]):
    """``value`` with every string under an old folder moved to the new one, through lists
    and dicts (a job's params and result)."""
    if isinstance(value, str):
        for old, new in moves:
            if value == old or value.startswith(old + "/"):
                return new + value[len(old) :]
        return value
    if isinstance(value, list):
        return [_moved(item, moves) for item in value]
    if isinstance(value, dict):
        return {key: _moved(item, moves) for key, item in value.items()}
    return value


def paths_relocate(old_folders: dict[str, str], new_folders: dict[str, Path]) -> int:
    """Rewrite the stored paths under each of ``old_folders`` (``{subfolder: path}``, as the
    manifest records them) to ``new_folders``' same subfolder. Returns the rows changed."""
    moves = [(old, str(new_folders[sub])) for sub, old in old_folders.items() if old != str(new_folders[sub])]
    # The longer folder first: one folder may lie inside the other.
    moves.sort(key=lambda move: len(move[0]), reverse=True)
    if not moves:
        return 0
    changed = 0
    with transaction.atomic():
        for space in EmbeddingSpace.objects.all().only("id", "vectors_path", "ids_path"):
            vectors, ids = _moved(space.vectors_path, moves), _moved(space.ids_path, moves)
            if (vectors, ids) != (space.vectors_path, space.ids_path):
                EmbeddingSpace.objects.filter(pk=space.pk).update(vectors_path=vectors, ids_path=ids)
                changed += 1
        for batch in SamplingBatch.objects.exclude(upload_path=""):
            moved = _moved(batch.upload_path, moves)
            if moved != batch.upload_path:
                SamplingBatch.objects.filter(pk=batch.pk).update(upload_path=moved)
                changed += 1
        for job in Job.objects.all().only("id", "params", "result"):
            params, result = _moved(job.params, moves), _moved(job.result, moves)
            if (params, result) != (job.params, job.result):
                Job.objects.filter(pk=job.pk).update(params=params, result=result)
                changed += 1
    return changed


def paths_outside(old_folders: dict[str, str]) -> list[str]:
    """Stored embedding paths that lie under none of the backup's folders (a space read
    from elsewhere, which the backup does not hold): the operator must bring them."""
    roots = list(old_folders.values())
    outside = []
    for space in EmbeddingSpace.objects.all().only("vectors_path", "ids_path"):
        for path in (space.vectors_path, space.ids_path):
            if not any(path == root or path.startswith(root + "/") for root in roots) and not Path(path).exists():
                outside.append(path)
    return outside
