from django.core.management.base import BaseCommand, CommandError

from annotation.catalog.uploads import EMBEDDINGS, upload_check_path
from annotation.core.errors import DomainError
from annotation.management.commands._progress import job_run_here
from annotation.models import Job, Modality
from annotation.runs.jobs import job_create


class Command(BaseCommand):
    help = "Import precomputed embeddings (.npy + ids file, one id per line in row order). All or nothing."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--space", required=True, help="name of the embedding space, unique in the dataset")
        parser.add_argument("--modality", required=True, choices=Modality.values)
        parser.add_argument("--vectors", required=True, help=".npy file, float (rows, dims)")
        parser.add_argument("--ids", required=True, help="text file, one item key per line, in row order")
        parser.add_argument("--model", default="", help="name of the encoder that made the vectors")

    def handle(self, *args, **options):
        try:
            # Read in place, but bounded like an upload: what the API refuses, this does.
            for path in (options["vectors"], options["ids"]):
                upload_check_path(path, kind=EMBEDDINGS)
        except DomainError as exc:
            raise CommandError(str(exc)) from exc
        job = job_create(
            kind=Job.Kind.IMPORT_EMBEDDINGS,
            params={
                "dataset": options["dataset"],
                "space": options["space"],
                "modality": options["modality"],
                "vectors_path": options["vectors"],
                "ids_path": options["ids"],
                "model_name": options["model"],
            },
        )
        job = job_run_here(job)
        self.stdout.write(
            f"space {options['space']!r} of {options['dataset']!r}: {job.result['count']} {options['modality']} "
            f"vectors of {job.result['dimension']} dims"
        )
