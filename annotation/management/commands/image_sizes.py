from django.core.management.base import BaseCommand, CommandError

from annotation.catalog.image_files import image_sizes_refresh
from annotation.core.errors import DomainError
from annotation.management.commands._progress import print_progress


class Command(BaseCommand):
    help = (
        "Read every picture's size of a dataset from its file again (as a browser shows it: a sideways "
        "photo's EXIF orientation turns it) and store the ones that changed. All or nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="dataset name (its pictures under its images root)")

    def handle(self, *args, **options):
        try:
            refresh = image_sizes_refresh(dataset_name=options["dataset"], progress=print_progress)
        except DomainError as exc:
            raise CommandError(str(exc)) from exc
        self.stderr.write("")
        self.stdout.write(
            f"dataset {options['dataset']!r}: read {refresh.images} pictures, {refresh.changed} sizes changed"
        )
