from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.catalog.selectors import dataset_get
from annotation.catalog.services import embedding_space_import
from annotation.models import Caption, Image
from sampling.embeddings import write_ids, write_normalized
from sampling.encoders import ENCODERS, EncoderUnavailable, cocaption_retrieval_rate, image_encoder, text_encoder


class Command(BaseCommand):
    help = (
        "Encode a dataset's captions or images with an offline encoder and write <space>.npy + <space>.ids.txt "
        "for import_embeddings (needs requirements-embed.txt)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        parser.add_argument("--space", required=True, help="space name: output file stem")
        parser.add_argument("--encoder", required=True, choices=sorted(ENCODERS))
        parser.add_argument("--out-dir", required=True, type=Path)
        parser.add_argument("--import", dest="do_import", action="store_true", help="also import the space")

    def handle(self, *args, dataset, space, encoder, out_dir, do_import, **options):
        dataset_obj = dataset_get(name=dataset)
        modality = ENCODERS[encoder]
        try:
            if modality == "caption":
                rows = list(
                    Caption.objects.filter(dataset=dataset_obj).order_by("id").values_list("key", "text", "image_id")
                )
                vectors = text_encoder(encoder)([text for _, text, _ in rows])
                rate = cocaption_retrieval_rate(vectors, [image for _, _, image in rows])
                self.stdout.write(f"nearest caption is a co-caption for {rate:.0%} of captions")
            else:
                if not dataset_obj.images_root:
                    raise CommandError(f"dataset {dataset!r} has no images_root: image files are needed to encode")
                rows = list(Image.objects.filter(dataset=dataset_obj).order_by("id").values_list("key", "file_path"))
                root = Path(dataset_obj.images_root)
                vectors = image_encoder()([root / path for _, path in rows])
        except EncoderUnavailable as exc:
            raise CommandError(str(exc)) from exc
        keys = [row[0] for row in rows]
        vectors_path, ids_path = out_dir / f"{space}.npy", out_dir / f"{space}.ids.txt"
        write_normalized(vectors, keys, vectors_path)
        write_ids(keys, ids_path)
        self.stdout.write(f"wrote {vectors.shape[0]} x {vectors.shape[1]} {modality} vectors to {vectors_path}")
        if do_import:
            embedding_space_import(
                dataset_name=dataset,
                space_name=space,
                modality=modality,
                vectors_path=vectors_path,
                ids_path=ids_path,
                model_name=encoder,
            )
            self.stdout.write(f"imported space {space!r}")
