from django.core.management.base import BaseCommand, CommandError

from annotation.catalog.uploads import PAIR_LIST, upload_store_path
from annotation.core.errors import DomainError
from annotation.management.commands._progress import print_progress
from annotation.models import JobStatus
from sampling import selectors
from sampling.methods import strategies
from sampling.methods.model_topk import MODEL_TOPK
from sampling.methods.pairlist import MERGE_REPEATS, REPEATS
from sampling.models import SamplingBatch
from sampling.runs.batch import sampling_batch_is_stale, sampling_batch_run
from sampling.runs.chord import shards_lines
from sampling.services import sampling_batch_create, sampling_batch_create_from_upload, sampling_batch_start


def parse_method(value: str) -> tuple[str, int | None]:
    """NAME or NAME=BUDGET (BUDGET a whole number, or "all")."""
    name, _, budget = value.partition("=")
    name = name.strip()
    if name not in strategies.METHODS:
        raise CommandError(f"--method {value}: unknown method {name!r}; use one of {', '.join(strategies.METHODS)}")
    budget = budget.strip()
    if budget in ("", "all"):
        return name, None
    try:
        return name, int(budget)
    except ValueError:
        raise CommandError(f"--method {value}: the budget must be a whole number or 'all', got {budget!r}") from None


class Command(BaseCommand):
    help = (
        "Create a sampling batch and run it here with progress (or queue it with --background). "
        "Prints the batch id and the pairs per method. Also: --status ID, --start ID."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset")
        parser.add_argument("--split")
        parser.add_argument(
            "--method",
            action="append",
            dest="methods",
            metavar="NAME[=BUDGET]",
            help=f"repeatable; one of {', '.join(strategies.METHODS)}, {MODEL_TOPK}; no budget: all the method gives",
        )
        parser.add_argument(
            "--audit-model",
            action="append",
            default=[],
            metavar="NAME:image-space=S,caption-space=S",
            help=f"{MODEL_TOPK}: a model to audit, by its stored spaces (repeatable: the models' pairs are pooled)",
        )
        parser.add_argument(
            "--audit-directions",
            help=f"{MODEL_TOPK}: comma-separated from c2i,i2c,c2c,i2i (default: all the models allow)",
        )
        parser.add_argument(
            "--audit-queries", type=int, help=f"{MODEL_TOPK}: queries sampled per direction (default: every item)"
        )
        parser.add_argument(
            "--k", type=int, default=5, help=f"neighbours per item; for {MODEL_TOPK}, each query's top k (default 5)"
        )
        parser.add_argument(
            "--cocaption",
            choices=strategies.COCAPTION_MODES,
            default=strategies.COCAPTION_CYCLE,
            help="c2c_cocaption pairs: cycle (the default, as CxC: each caption in two pairs, five per image of "
            "five captions) or all (every pair of a group)",
        )
        parser.add_argument("--seed", type=int, default=0, help="the same seed gives the same pairs (default 0)")
        parser.add_argument(
            "--space", action="append", dest="spaces", help="embedding space to search (repeatable); default all"
        )
        parser.add_argument("--ratings-per-pair", type=int, default=5)
        parser.add_argument("--priority", type=int, default=0)
        parser.add_argument("--upload", metavar="CSV", help="queue the pairs of a CxC-shaped pair list instead")
        parser.add_argument(
            "--repeats",
            choices=REPEATS,
            default=MERGE_REPEATS,
            help="with --upload: a pair the list names twice (either order) is queued once (merge, the default) "
            "or the list is refused (refuse)",
        )
        parser.add_argument("--background", action="store_true", help="queue the batch for a Celery worker")
        parser.add_argument("--status", type=int, metavar="ID", help="show a batch's status and progress")
        parser.add_argument("--start", type=int, metavar="ID", help="start a pending or failed batch again")

    def handle(self, *args, **options):
        try:
            if options["status"] is not None:
                self._show(selectors.sampling_batch_get(batch_id=options["status"]))
                return
            if options["start"] is not None:
                batch = selectors.sampling_batch_get(batch_id=options["start"])
            else:
                batch = self._create(options)
            self._run(batch, background=options["background"])
        except DomainError as exc:
            raise CommandError(str(exc)) from exc

    def _create(self, options) -> SamplingBatch:
        if not options["dataset"] or not options["split"]:
            raise CommandError("give --dataset and --split (or --status ID / --start ID)")
        if options["upload"]:
            if options["methods"]:
                raise CommandError("give either --method or --upload, not both")
            # A copy in the upload folder, like the API's: a worker reads it by an
            # absolute path, wherever this command ran.
            return sampling_batch_create_from_upload(
                dataset_name=options["dataset"],
                split_name=options["split"],
                path=upload_store_path(options["upload"], kind=PAIR_LIST),
                ratings_per_pair=options["ratings_per_pair"],
                priority=options["priority"],
                repeats=options["repeats"],
            )
        if not options["methods"]:
            raise CommandError(f"give at least one --method NAME[=BUDGET] ({', '.join(strategies.METHODS)})")
        methods: dict[str, int | None] = {}
        for value in options["methods"]:
            name, budget = parse_method(value)
            if name in methods:
                raise CommandError(f"--method {name} is given twice")
            methods[name] = budget
        return sampling_batch_create(
            dataset_name=options["dataset"],
            split_name=options["split"],
            methods=methods,
            k=options["k"],
            spaces=options["spaces"] or [],
            ratings_per_pair=options["ratings_per_pair"],
            seed=options["seed"],
            priority=options["priority"],
            cocaption=options["cocaption"],
            audit=_audit(options),
        )

    def _run(self, batch: SamplingBatch, *, background: bool) -> None:
        if background:
            sampling_batch_start(batch=batch)
            self.stdout.write(f"batch {batch.pk} queued; follow it with: manage.py sample --status {batch.pk}")
            return
        if batch.status != JobStatus.PENDING:
            sampling_batch_start(batch=batch, enqueue=False)
        batch = sampling_batch_run(batch_id=batch.pk, echo=print_progress)
        self.stderr.write("")
        if batch.status == JobStatus.FAILED:
            raise CommandError(f"batch {batch.pk} failed: {batch.error}")
        self._show(batch)
        if batch.status == JobStatus.RUNNING:
            self.stdout.write(
                f"its search went on to the workers; follow it with: manage.py sample --status {batch.pk}"
            )

    def _show(self, batch: SamplingBatch) -> None:
        stale = " (stale: the process running it is gone; start it again)" if sampling_batch_is_stale(batch) else ""
        self.stdout.write(f"batch {batch.pk}: {batch.status}{stale}")
        if batch.status == JobStatus.SUCCEEDED:
            for method, count in batch.pairs_per_method.items():
                self.stdout.write(f"{method}: {count}")
            total = sum(batch.pairs_per_method.values())
            self.stdout.write(f"total: {total} pairs, {total * batch.ratings_per_pair} rating slots")
            for line in upload_summary(batch):
                self.stdout.write(line)
        elif batch.status == JobStatus.FAILED:
            self.stdout.write(f"error: {batch.error}")
        else:
            self.stdout.write(f"progress: {batch.progress_done}/{batch.progress_total} {batch.progress_message}")
        for line in shards_lines(batch):
            self.stdout.write(line)


def upload_summary(batch: SamplingBatch) -> list[str]:
    """What an uploaded list's run left out, in words."""
    if batch.source != SamplingBatch.Source.UPLOADED:
        return []
    lines = []
    merged = batch.stats.get("rows_merged", 0)
    if merged:
        lines.append(f"merged: {merged} row(s) repeated a pair named earlier in the list (queued once)")
    gold = batch.stats.get("gold_pairs_left_out", 0)
    if gold:
        lines.append(f"gold: {gold} pair(s) equal to an active gold pair of the dataset were left out")
    in_file, queued = batch.stats.get("pairs_in_file", 0), batch.stats.get("already_queued", 0)
    if queued and queued == in_file:
        lines.append(f"already queued: all {queued} pairs of the list were queued before; nothing new to rate")
    elif queued:
        lines.append(f"already queued: {queued} of the list's {in_file} pairs were queued before and are skipped")
    return lines


def _audit(options) -> dict | None:
    """The audit configuration of the --audit-* options; None without --audit-model."""
    if not options["audit_model"]:
        if options["audit_directions"] or options["audit_queries"] is not None:
            raise CommandError("--audit-directions and --audit-queries need --audit-model (and --method model_topk)")
        return None
    models = []
    for text in options["audit_model"]:
        name, sep, rest = text.partition(":")
        if not sep or not name.strip():
            raise CommandError(f"--audit-model {text!r}: expected NAME:image-space=S,caption-space=S")
        model = {"name": name.strip()}
        for part in filter(None, (p.strip() for p in rest.split(","))):
            key, eq, value = part.partition("=")
            if key.strip() not in ("image-space", "caption-space") or not eq or not value.strip():
                raise CommandError(f"--audit-model {name!r}: {part!r} is not image-space=S or caption-space=S")
            model[key.strip().replace("-", "_")] = value.strip()
        models.append(model)
    audit: dict = {"models": models, "queries": options["audit_queries"]}
    if options["audit_directions"]:
        audit["directions"] = [d.strip() for d in options["audit_directions"].split(",") if d.strip()]
    return audit
