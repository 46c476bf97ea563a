"""Store uploaded files under DATA_DIR/uploads so a background job can read them by path."""

import uuid
from pathlib import Path

from django.conf import settings


def upload_store(uploaded_file, *, suffix_hint: str = "") -> str:
    folder = Path(settings.DATA_DIR) / "uploads" / uuid.uuid4().hex
    folder.mkdir(parents=True, exist_ok=True)
    name = Path(uploaded_file.name or f"upload{suffix_hint}").name
    target = folder / name
    with target.open("wb") as out:
        for chunk in uploaded_file.chunks():
            out.write(chunk)
    return str(target)
