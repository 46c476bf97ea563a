import json
import os
import sys
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.catalog.selectors import dataset_get, embedding_space_get, split_get, split_item_keys
from annotation.core.errors import DomainError
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
from annotation.evaluation.compare import comparison_csv, comparison_rows, format_comparison
from annotation.evaluation.explain.adversarial import ALL_NAMED, COLOUR_DISTANCE, COLOUR_POOLS
from annotation.evaluation.explain.failures import SIZE_THRESHOLD
from annotation.evaluation.explain.tables import format_adversarial, format_explained
from annotation.evaluation.explained import (
    ADVERSARIAL_COLUMNS,
    adversarial_settings,
    explain_inputs,
    explain_model,
    failures_csv,
)
from annotation.evaluation.jobs import split_audited
from annotation.evaluation.protocols import PROTOCOLS
from annotation.evaluation.report import check_protocols
from annotation.models import Modality

SPACE_PARTS = ("vectors", "ids", "space")
# Keys of a --model NAME:key=value,... spec.
MODEL_KEYS = {
    "encoder",
    "image-space",
    "caption-space",
    "image-vectors",
    "image-ids",
    "caption-vectors",
    "caption-ids",
    "spaces",
}


class Command(BaseCommand):
    help = (
        "Score a model's embeddings against CxC-format ratings (ours or the public release): "
        "image<->text, text->text and image->image retrieval (R@1/5/10, median rank) and the bootstrap "
        "Spearman correlation with human STS, SIS and SITS scores. Prints the tables; --out writes JSON."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--ratings", help="folder with sts_<split>.csv, sis_<split>.csv ... (the CxC-extended positives)"
        )
        parser.add_argument(
            "--audited",
            action="store_true",
            help="also use the dataset's own ratings of the split (every fully rated pair, an audit of a "
            "model's top-k included) as human-audited positives",
        )
        parser.add_argument(
            "--model",
            action="append",
            default=[],
            metavar="NAME:KEY=VALUE,...",
            help="a model to score, repeatable for a comparison table; keys: image-space, caption-space (stored "
            "spaces) or image-vectors, image-ids, caption-vectors, caption-ids (files), spaces=joint|unimodal",
        )
        parser.add_argument(
            "--protocols",
            default=",".join(PROTOCOLS),
            help=f"comma-separated, from {', '.join(PROTOCOLS)} (default: all)",
        )
        parser.add_argument("--top-k", type=int, default=10, help="k of the own top-k precision (10)")
        parser.add_argument("--csv", help="write the comparison table as CSV to this file")
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
        _explain_arguments(parser)

    def handle(self, *args, **options):
        try:
            # Checked before anything is read: a misspelled protocol costs no loading.
            protocols = tuple(p.strip() for p in options["protocols"].split(",") if p.strip())
            check_protocols(protocols, options["top_k"])
            dataset = dataset_get(name=options["dataset"])
            split = split_get(dataset=dataset, name=options["split"])
            models = self._models(dataset, options)
            adversarial = self._explain_check(models, options)
            image_keys, caption_pairs = split_item_keys(split=split)
            items = SplitItems.from_pairs(split.name, image_keys, caption_pairs)
            ratings_split = options["ratings_split"] or options["split"]
            ratings = read_ratings_folder(options["ratings"], ratings_split) if options["ratings"] else None
            audited = split_audited(split) if options["audited"] else None
            inputs = explain_inputs(split, items) if options["explain"] else None
            reports, explained_models = {}, []
            for name, (spaces, joint, encoder) in models.items():
                self._progress(f"model {name}")
                report = evaluate(
                    items=items,
                    ratings=ratings,
                    audited=audited,
                    image_space=spaces[Modality.IMAGE],
                    caption_space=spaces[Modality.CAPTION],
                    joint=joint,
                    protocols=protocols,
                    top_k=options["top_k"],
                    restrict_to_split=options["restrict_to_split"],
                    samples=options["samples"],
                    seed=options["seed"],
                    queries=options["bootstrap_queries"],
                    progress=self._progress,
                    require_task=inputs is None,
                )
                if inputs is not None and spaces[Modality.CAPTION] is not None:
                    explained = explain_model(
                        name,
                        items,
                        spaces[Modality.CAPTION],
                        inputs,
                        size_threshold=options["size_threshold"],
                        adversarial=None if adversarial is None else adversarial | {"encoder": encoder},
                        progress=self._progress,
                    )
                    report["explain"] = explained.summary
                    explained_models.append(explained)
                reports[name] = {
                    "vectors": {m: s.source if s is not None else None for m, s in spaces.items()},
                    **report,
                }
        except (DomainError, EvaluationError) as exc:
            raise CommandError(str(exc)) from None
        finally:
            sys.stderr.write("\r" + " " * 60 + "\r")
        head = {
            "dataset": dataset.name,
            "ratings_dir": str(Path(options["ratings"]).resolve()) if options["ratings"] else None,
            "ratings_split": ratings_split,
            "audited": bool(options["audited"]),
        }
        rows = comparison_rows(reports)
        if options["model"]:
            output = head | {"models": reports, "comparison": rows}
            for name, report in reports.items():
                self.stdout.write(f"== model {name}\n" + format_report(head | report) + "\n")
            self.stdout.write("\nComparison (value [95% bootstrap interval over queries]):")
            self.stdout.write(format_comparison(rows, list(reports)))
        else:
            (output,) = (head | report for report in reports.values())
            self.stdout.write(format_report(output))
        if options["explain"]:
            self._write_explained(reports, explained_models, options)
        if options["out"]:
            _write_text(json.dumps(output, indent=2, allow_nan=False) + "\n", Path(options["out"]))
            self.stdout.write(f"\nreport written to {options['out']}")
        if options["csv"]:
            _write_text(comparison_csv(rows), Path(options["csv"]))
            self.stdout.write(f"\ncomparison written to {options['csv']}")

    @staticmethod
    def _explain_check(models: dict, options) -> dict | None:
        """The explained failures' options checked before anything is read; the
        adversarial settings (without the encoder) or None."""
        if options["adversarial"] and not options["explain"]:
            raise CommandError("--adversarial is part of the explained failures: add --explain")
        if not options["explain"]:
            return None
        if not any(spaces[Modality.CAPTION] for spaces, _, _ in models.values()):
            raise CommandError("--explain ranks captions: give a model caption vectors")
        if not 0 <= options["size_threshold"] <= 1:
            raise CommandError(f"--size-threshold is a share of the image, 0-1; got {options['size_threshold']}")
        if not options["adversarial"]:
            return None
        for name, (spaces, _, encoder) in models.items():
            if spaces[Modality.CAPTION] is not None and not encoder:
                raise CommandError(
                    f"model {name!r}: --adversarial needs its caption encoder: give --encoder or encoder="
                )
        return adversarial_settings(
            seed=options["adversarial_seed"],
            colour_distance=options["colour_distance"],
            colour_pool=options["colour_pool"],
        )

    def _write_explained(self, reports: dict, models: list, options) -> None:
        """The global table of the explained failures, side by side, the adversarial
        queries' table when they ran; the failures file and the adversarial file."""
        explained = {n: r["explain"] for n, r in reports.items() if "explain" in r}
        self.stdout.write("\n" + format_explained(explained))
        failures = [row for model in models for row in model.failures]
        _write_text(failures_csv(failures), Path(options["failures"]))
        if options["adversarial"]:
            self.stdout.write("\n" + format_adversarial(explained))
            changed = [row for model in models for row in model.adversarial]
            _write_text(failures_csv(changed, ADVERSARIAL_COLUMNS), Path(options["adversarial_changes"]))
        self.stdout.write(f"\n{len(failures):,} failures written to {options['failures']}")
        if options["adversarial"]:
            self.stdout.write(f"\n{len(changed):,} changed captions written to {options['adversarial_changes']}")

    def _models(self, dataset, options) -> dict[str, tuple[dict, bool, str | None]]:
        """name -> (modality -> Space or None, joint, caption encoder or None) of every
        model to score: the --model specs, or the one model the single-model options give."""
        if not options["model"]:
            spaces = {m: self._space(dataset, m, options) for m in (Modality.IMAGE, Modality.CAPTION)}
            encoder = _encoder(dataset, options["encoder"], options["caption_space"])
            return {"model": (spaces, self._joint(options["spaces"], spaces), encoder)}
        if any(options[f"{m}_{part}"] for m in (Modality.IMAGE, Modality.CAPTION) for part in SPACE_PARTS):
            raise CommandError("give models either with --model or with the --image-*/--caption-* options, not both")
        models = {}
        for text in options["model"]:
            name, spec = _parse_model(text)
            if name in models:
                raise CommandError(f"--model {name!r} is given twice; give each model a name of its own")
            fields = {
                f"{m}_{part}": spec.get(f"{m}-{part}")
                for m in (Modality.IMAGE, Modality.CAPTION)
                for part in SPACE_PARTS
            }
            spaces = {m: self._space(dataset, m, fields) for m in (Modality.IMAGE, Modality.CAPTION)}
            if not any(spaces.values()):
                raise CommandError(f"--model {name!r} names no vectors; give image-space/caption-space or files")
            encoder = _encoder(dataset, spec.get("encoder") or options["encoder"], spec.get("caption-space"))
            models[name] = (spaces, self._joint(spec.get("spaces"), spaces), encoder)
        return models

    def _space(self, dataset, modality: str, options) -> Space | None:
        vectors, ids, stored = (options[f"{modality}_{part}"] for part in SPACE_PARTS)
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


def _explain_arguments(parser) -> None:
    """The explained failures' options: --explain and its threshold and file, --adversarial
    and its encoder, seed and colours."""
    parser.add_argument(
        "--explain",
        action="store_true",
        help="also explain each model's failures: every caption ranked against the images' other captions "
        "(caption space), each failure's concept metrics over the annotated objects; prints the global table "
        "and writes the failures (--failures)",
    )
    parser.add_argument(
        "--size-threshold",
        type=float,
        default=SIZE_THRESHOLD,
        help=f"SD's binary threshold T_D, a share of the image's area ({SIZE_THRESHOLD:g})",
    )
    parser.add_argument(
        "--failures", default="failures.csv", help="with --explain: the failures' CSV file (failures.csv)"
    )
    parser.add_argument(
        "--adversarial",
        action="store_true",
        help="with --explain: also adversarial queries (an antonym, a colour, a size word changed, one at a "
        "time), re-embedded by the model's own caption encoder and ranked again",
    )
    parser.add_argument(
        "--encoder",
        help="the caption encoder that made the vectors (embed's names); default: the stored caption space's "
        "own; a --model takes encoder=NAME",
    )
    parser.add_argument(
        "--adversarial-changes",
        default="adversarial.csv",
        help="with --adversarial: the changed captions' CSV file, their ranks before and after (adversarial.csv)",
    )
    parser.add_argument("--adversarial-seed", type=int, default=0, help="seed of the substitutions' draws (0)")
    parser.add_argument(
        "--colour-distance",
        type=float,
        default=COLOUR_DISTANCE,
        help=f"a replacement colour lies more than this sRGB distance away ({COLOUR_DISTANCE:g})",
    )
    parser.add_argument(
        "--colour-pool",
        choices=COLOUR_POOLS,
        default=ALL_NAMED,
        help="replacement colours from every named colour (named) or those the captions use (captions)",
    )


def _encoder(dataset, given: str | None, stored_space: str | None) -> str | None:
    """The caption encoder of a model: the one given, else its stored caption space's."""
    if given or not stored_space:
        return given
    return embedding_space_get(dataset=dataset, name=stored_space).model_name or None


def _parse_model(text: str) -> tuple[str, dict[str, str]]:
    """``NAME:key=value,...`` -> (name, {key: value}); CommandError naming what is wrong."""
    name, sep, rest = text.partition(":")
    name = name.strip()
    if not sep or not name:
        raise CommandError(f"--model {text!r}: expected NAME:key=value,... (e.g. clip:image-space=clip-img)")
    spec: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or not value.strip():
            raise CommandError(f"--model {name!r}: {part!r} is not key=value")
        if key not in MODEL_KEYS:
            raise CommandError(f"--model {name!r}: unknown key {key!r}; use {', '.join(sorted(MODEL_KEYS))}")
        spec[key] = value.strip()
    if spec.get("spaces") not in (None, "joint", "unimodal"):
        raise CommandError(f"--model {name!r}: spaces is joint or unimodal, got {spec['spaces']!r}")
    return name, spec


def _write_text(text: str, path: Path) -> None:
    """Write atomically: the file appears complete or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
