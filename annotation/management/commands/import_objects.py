from django.core.management.base import BaseCommand, CommandError

from annotation.catalog.uploads import OBJECTS, upload_check_path
from annotation.core.errors import DomainError
from annotation.management.commands._progress import job_run_here
from annotation.models import Job
from annotation.runs.jobs import job_create


class Command(BaseCommand):
    help = (
        "Import object annotations (COCO instances JSON: categories, images, annotations) into a dataset's "
        "images, matched by COCO id, else by file name. All or nothing; a matched image's objects are replaced."
    )

    def add_arguments(self, parser):
        parser.add_argument("dataset", help="name of the dataset whose images the objects belong to")
        parser.add_argument("file", help="COCO instances JSON, e.g. instances_val2014.json")

    def handle(self, *args, **options):
        try:
            # Read in place, but bounded like an upload: what the API refuses, this does.
            upload_check_path(options["file"], kind=OBJECTS)
        except DomainError as exc:
            raise CommandError(str(exc)) from exc
        job = job_create(kind=Job.Kind.IMPORT_OBJECTS, params={"path": options["file"], "dataset": options["dataset"]})
        job = job_run_here(job)
        r = job.result
        self.stdout.write(
            f"dataset {options['dataset']!r}: imported {r['objects_imported']:,} objects of {r['categories']} "
            f"categories into {r['matched_by_cocoid'] + r['matched_by_file_name']:,} images "
            f"({r['matched_by_cocoid']:,} matched by COCO id, {r['matched_by_file_name']:,} by file name); "
            f"{r['images_unmatched']:,} of the file's images matched none "
            f"({r['objects_of_unmatched_images']:,} objects skipped); "
            f"{r['objects_replaced']:,} earlier objects replaced"
        )
