from django.core.management.base import BaseCommand, CommandError

from annotation.backup.restore import backup_restore
from annotation.core.errors import BackupError


class Command(BaseCommand):
    help = (
        "Restore a backup made by `manage.py backup` into this installation's empty database, DATA_DIR and "
        "EXPORT_DIR. The manifest, schema version, SECRET_KEY and every checksum are checked first; nothing is "
        "written when one does not match. Stop the web server and workers first."
    )

    def add_arguments(self, parser):
        parser.add_argument("folder", help="the backup's folder, holding manifest.json")
        parser.add_argument(
            "--accept-new-secret-key",
            action="store_true",
            help="restore although this installation's SECRET_KEY is not the backup's (raters' opaque ids and "
            "the export pseudonyms then change)",
        )

    def handle(self, *args, **options):
        try:
            backup_restore(
                options["folder"], report=self._report, accept_new_secret_key=options["accept_new_secret_key"]
            )
        except BackupError as exc:
            raise CommandError(str(exc)) from exc

    def _report(self, stage: str, message: str) -> None:
        stream = self.stderr if stage == "warning" else self.stdout
        stream.write(f"{stage}: {message}")
