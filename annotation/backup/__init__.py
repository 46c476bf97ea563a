"""Backup and restore of a whole installation: the database (``pg_dump``'s custom format
from one exported snapshot in services mode, SQLite's online backup in embedded mode), the
files under ``DATA_DIR`` and ``EXPORT_DIR``, and ``manifest.json`` with every file's
SHA-256, every table's row count and the schema version.

Rooms: :mod:`~annotation.backup.create` (``backup_create``: the hidden staging folder
renamed once complete), :mod:`~annotation.backup.restore` (``backup_restore``: every check
before anything is written, then the verification of the counts),
:mod:`~annotation.backup.postgres` and :mod:`~annotation.backup.sqlite` (each engine's
snapshot, dump and restore), :mod:`~annotation.backup.files` (what is copied, checksums),
:mod:`~annotation.backup.manifest`, :mod:`~annotation.backup.tables` (row counts, schema
version), :mod:`~annotation.backup.relocate` (stored paths after a move to other folders).

Imports: Django's database connection and migration loader, ``annotation.models``,
``sampling.models``, ``annotation.core`` and ``annotation.export.manifest`` (the code
version). Only the ``backup`` and ``restore`` commands import it.
"""
