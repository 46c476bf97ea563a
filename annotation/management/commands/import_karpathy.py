from django.core.management.base import BaseCommand, CommandError

from annotation.catalog.uploads import KARPATHY, upload_check_path
from annotation.core.errors import DomainError
from annotation.management.commands._progress import job_run_here
from annotation.models import Job
from annotation.runs.jobs import job_create


class Command(BaseCommand):
    help = "Import images and captions from Karpathy-split JSON (dataset_coco.json shape). All or nothing."

    def add_arguments(self, parser):
        parser.add_argument("file", help="Karpathy JSON file")
        parser.add_argument("--name", required=True, help="dataset name (new, or existing to add splits)")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--images-root", help="folder holding <filepath>/<filename> of every image")
        source.add_argument("--image-url-prefix", help="serve images from this URL prefix instead")
        parser.add_argument("--split", action="append", dest="splits", help="split to import (repeatable); default all")
        parser.add_argument(
            "--key-prefix",
            help="caption key prefix (e.g. COCO_val2014) for files whose names carry none; "
            "image keys then become <prefix>_<cocoid:012d>.jpg",
        )

    def handle(self, *args, **options):
        try:
            # The file is read in place; the limit is an upload's all the same, so a file
            # the API would refuse is refused here too (raise the setting to import it).
            upload_check_path(options["file"], kind=KARPATHY)
        except DomainError as exc:
            raise CommandError(str(exc)) from exc
        job = job_create(
            kind=Job.Kind.IMPORT_KARPATHY,
            params={
                "path": options["file"],
                "name": options["name"],
                "images_root": options["images_root"] or "",
                "image_url_prefix": options["image_url_prefix"] or "",
                "splits": options["splits"] or [],
                "key_prefix": options["key_prefix"] or "",
            },
        )
        job = job_run_here(job)
        result = job.result
        splits = ", ".join(f"{name}: {count} images" for name, count in result["splits"].items())
        self.stdout.write(
            f"dataset {options['name']!r}: imported {result['images']} images "
            f"and {result['captions']} captions ({splits})"
        )
