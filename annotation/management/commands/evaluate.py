import json
import os
import sys
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.errors import DomainError
from annotation.evaluation import (
    BOOTSTRAP_SAMPLES,
    BOTH_ITEMS,
    QUERY_RULES,
    EvaluationError,
    Space,
    SplitItems,
    evaluate,
    format_report,
    load_space,
    read_ratings_folder,
)
from annotation.models import Modality
from annotation.selectors import dataset_get, embedding_space_get, split_get, split_item_keys


class Command(BaseCommand):
    help = (
        "Score a model's embeddings against CxC-format ratings (ours or the public release): "
        "image<->text, text->text and image->image retrieval (R@1/5/10, median rank) and the bootstrap "
        "Spearman correlation with human STS, SIS and SITS scores. Prints the tables; --out writes JSON."
    )

    def add_arguments(self, parser):
        parser.add_argument("--ratings", required=True, help="folder with sts_<split>.csv, sis_<split>.csv ...")
        parser.add_argument("--dataset", required=True, help="the imported dataset: its items and original pairs")
        parser.add_argument("--split", required=True, help="split of the dataset whose items are evaluated")
        parser.add_argument(
            "--ratings-split",
            help="split name in the ratings file names (sts_<name>.csv); default: --split",
        )
        for modality in (Modality.IMAGE, Modality.CAPTION):
            parser.add_argument(f"--{modality}-vectors", help=f".npy file, float ({modality}s, dims)")
            parser.add_argument(f"--{modality}-ids", help=f"text file, one {modality} key per line, in row order")
            parser.add_argument(
                f"--{modality}-space", help=f"instead of files: a stored {modality} embedding space of the dataset"
            )
        parser.add_argument(
            "--spaces",
            choices=["joint", "unimodal"],
            help="joint: one space for images and captions (a dual encoder), all tasks run; unimodal: only "
            "intramodal tasks. Default: joint when both modalities are given",
        )
        parser.add_argument(
            "--restrict-to-split",
            action="store_true",
            help="leave out rated rows whose items are not in the split (they are counted); "
            "without it such rows are an error",
        )
        parser.add_argument("--samples", type=int, default=BOOTSTRAP_SAMPLES, help="bootstrap samples (1000)")
        parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (0)")
        parser.add_argument(
            "--bootstrap-queries",
            choices=QUERY_RULES,
            default=BOTH_ITEMS,
            help="which items of a rated row the bootstrap samples as queries: both (the default; column order "
            "means nothing, as in CxC's release) or first (the first column only)",
        )
        parser.add_argument("--out", help="write the report as JSON to this file")

    def handle(self, *args, **options):
        try:
            dataset = dataset_get(name=options["dataset"])
            split = split_get(dataset=dataset, name=options["split"])
            spaces = {m: self._space(dataset, m, options) for m in (Modality.IMAGE, Modality.CAPTION)}
            image_keys, caption_pairs = split_item_keys(split=split)
            items = SplitItems.from_pairs(split.name, image_keys, caption_pairs)
            ratings_split = options["ratings_split"] or options["split"]
            ratings = read_ratings_folder(options["ratings"], ratings_split)
            joint = self._joint(options["spaces"], spaces)
            report = evaluate(
                items=items,
                ratings=ratings,
                image_space=spaces[Modality.IMAGE],
                caption_space=spaces[Modality.CAPTION],
                joint=joint,
                restrict_to_split=options["restrict_to_split"],
                samples=options["samples"],
                seed=options["seed"],
                queries=options["bootstrap_queries"],
                progress=self._progress,
            )
        except (DomainError, EvaluationError) as exc:
            raise CommandError(str(exc)) from None
        finally:
            sys.stderr.write("\r" + " " * 60 + "\r")
        report = {
            "dataset": dataset.name,
            "ratings_dir": str(Path(options["ratings"]).resolve()),
            "ratings_split": ratings_split,
            "vectors": {m: s.source if s is not None else None for m, s in spaces.items()},
            **report,
        }
        self.stdout.write(format_report(report))
        if options["out"]:
            _write_json(report, Path(options["out"]))
            self.stdout.write(f"\nreport written to {options['out']}")

    def _space(self, dataset, modality: str, options) -> Space | None:
        vectors, ids, stored = (options[f"{modality}_{part}"] for part in ("vectors", "ids", "space"))
        if stored:
            if vectors or ids:
                raise CommandError(f"give --{modality}-space or --{modality}-vectors/--{modality}-ids, not both")
            space = embedding_space_get(dataset=dataset, name=stored)
            if space.modality != modality:
                raise CommandError(f"embedding space {stored!r} holds {space.modality} vectors, not {modality} vectors")
            return load_space(space.vectors_path, space.ids_path)
        if bool(vectors) != bool(ids):
            raise CommandError(f"--{modality}-vectors and --{modality}-ids go together")
        return load_space(vectors, ids) if vectors else None

    @staticmethod
    def _joint(choice: str | None, spaces: dict) -> bool:
        both = all(space is not None for space in spaces.values())
        if choice == "joint" and not both:
            raise CommandError("--spaces joint needs both image and caption vectors")
        if choice is None:
            return both
        return choice == "joint"

    @staticmethod
    def _progress(message: str) -> None:
        sys.stderr.write(f"\r{message} ...".ljust(60))
        sys.stderr.flush()


def _write_json(report: dict, path: Path) -> None:
    """Write atomically: the file appears complete or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2, allow_nan=False)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
