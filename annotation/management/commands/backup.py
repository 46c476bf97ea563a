from django.core.management.base import BaseCommand, CommandError

from annotation.backup.create import backup_create
from annotation.core.errors import BackupError


class Command(BaseCommand):
    help = (
        "Write one consistent backup into a new folder: the database (pg_dump's custom format, or SQLite's "
        "online backup), DATA_DIR and EXPORT_DIR, and manifest.json with checksums, row counts and the schema "
        "version. The folder appears only once the backup is complete. The app may go on serving meanwhile."
    )

    def add_arguments(self, parser):
        parser.add_argument("folder", help="the backup's folder: new or empty, e.g. /backups/2026-03-02T0300")

    def handle(self, *args, **options):
        try:
            backup_create(options["folder"], report=self._report)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc

    def _report(self, stage: str, message: str) -> None:
        if stage == "copying":
            return
        stream = self.stderr if stage == "warning" else self.stdout
        stream.write(f"{stage}: {message}")
