from pathlib import Path

from django.core.management.base import BaseCommand

from annotation.export import FORMATS
from annotation.management.commands._progress import job_run_here
from annotation.models import Job
from annotation.runs.jobs import job_create


class Command(BaseCommand):
    help = (
        "Export the complete pairs of a dataset: CxC CSV files (+ *_raw.csv), JSONL, Parquet, "
        "agreement.json and manifest.json. Files appear only once the whole export succeeded."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--out", required=True, help="destination folder: new or empty (see --overwrite)")
        parser.add_argument(
            "--split",
            action="append",
            dest="splits",
            help="split to export (repeatable, or comma-separated); default: every split that has pairs",
        )
        parser.add_argument(
            "--format",
            default=",".join(FORMATS),
            help=f"comma-separated formats out of {', '.join(FORMATS)} (default: all)",
        )
        parser.add_argument(
            "--overwrite",
            action="store_true",
            help="replace an earlier export in --out (only a folder holding a manifest.json)",
        )

    def handle(self, *args, **options):
        splits = [name.strip() for value in options["splits"] or [] for name in value.split(",") if name.strip()]
        job = job_create(
            kind=Job.Kind.EXPORT_DATASET,
            params={
                "dataset": options["dataset"],
                # Resolved here: a worker or web process may run from another folder.
                "out": str(Path(options["out"]).expanduser().resolve()),
                "splits": splits,
                "formats": [name.strip() for name in options["format"].split(",")],
                "overwrite": options["overwrite"],
            },
        )
        job = job_run_here(job)
        result = job.result
        self.stdout.write(
            f"exported {result['pairs']} pairs with {result['ratings']} ratings of {options['dataset']!r} "
            f"({', '.join(result['splits'])}; {', '.join(result['formats'])}) to {result['out']}: "
            f"{len(result['files'])} files"
        )
