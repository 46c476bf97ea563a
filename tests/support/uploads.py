"""The names of the files the upload storage holds."""

from annotation.catalog.uploads import uploads_root


def stored_names() -> list[str]:
    """The files under DATA_DIR/uploads, by name."""
    root = uploads_root()
    return sorted(p.name for p in root.rglob("*") if p.is_file()) if root.exists() else []
