"""Datasets and their items: splits, images, captions, embedding spaces; the kinds and
sampling methods pairs are made of."""

from django.db import models
from django.db.models import Q

from annotation.core import cxc


class TaskKind(models.TextChoices):
    STS = cxc.STS, "caption-caption (STS)"
    SIS = cxc.SIS, "image-image (SIS)"
    SITS = cxc.SITS, "caption-image (SITS)"
    # Not a CxC task (cxc.KINDS stays STS, SIS, SITS; nothing of it is exported as CxC):
    # the crowd's review of a retrieval failure, a query with the image it should have
    # found (image_a) and the one a model found first (image_b).
    REV = "REV", "retrieval failure review (REV)"


# Kinds a claim serves only when asked for by name: a claim of "any kind" (the API's
# claim without a kind) never hands out a review, which needs its own page and marks.
NAMED_ONLY_KINDS = frozenset({TaskKind.REV})


class SamplingMethod(models.TextChoices):
    """The CxC sampling method names, exactly as the public release writes them."""

    I2I_CSIM = "i2i_csim", "i2i_csim: image pairs by co-caption similarity"
    C2C_ISIM = "c2c_isim", "c2c_isim: caption pairs by image similarity"
    C2C_COCAPTION = "c2c_cocaption", "c2c_cocaption: captions of the same image"
    C2I_INTRASIM = "c2i_intrasim", "c2i_intrasim: intermodal pairs through rated pivots"
    C2I_ORIGINAL = "c2i_original", "c2i_original: every original image-caption pair"
    UPLOADED = "uploaded", "uploaded: a pair list without a method name"
    TOPK_C2I = "topk_c2i", "topk_c2i: a model's top-k images for a caption (model_topk audit)"
    TOPK_I2C = "topk_i2c", "topk_i2c: a model's top-k captions for an image (model_topk audit)"
    TOPK_C2C = "topk_c2c", "topk_c2c: a model's top-k captions for a caption (model_topk audit)"
    TOPK_I2I = "topk_i2i", "topk_i2i: a model's top-k images for an image (model_topk audit)"
    REVIEW = "review", "review: an explained evaluation's retrieval failures queued for the crowd's review"


METHOD_KIND = {
    SamplingMethod.I2I_CSIM: TaskKind.SIS,
    SamplingMethod.C2C_ISIM: TaskKind.STS,
    SamplingMethod.C2C_COCAPTION: TaskKind.STS,
    SamplingMethod.C2I_INTRASIM: TaskKind.SITS,
    SamplingMethod.C2I_ORIGINAL: TaskKind.SITS,
    SamplingMethod.TOPK_C2I: TaskKind.SITS,
    SamplingMethod.TOPK_I2C: TaskKind.SITS,
    SamplingMethod.TOPK_C2C: TaskKind.STS,
    SamplingMethod.TOPK_I2I: TaskKind.SIS,
}  # not REVIEW: no batch samples reviews or uploads them; an evaluation's failures are queued


class Modality(models.TextChoices):
    IMAGE = "image", "image"
    CAPTION = "caption", "caption"


class Dataset(models.Model):
    name = models.SlugField(max_length=100, unique=True, help_text="Short unique name, used on the command line.")
    description = models.TextField(blank=True)
    images_root = models.CharField(
        max_length=1000,
        blank=True,
        help_text="Folder that holds the image files (their Karpathy filepath/filename below it).",
    )
    image_url_prefix = models.CharField(
        max_length=1000,
        blank=True,
        help_text="Alternative to images_root: images are served from this URL prefix + file path.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=~Q(images_root="") | ~Q(image_url_prefix=""),
                name="dataset_has_image_source",
                violation_error_message="A dataset needs images_root or image_url_prefix.",
            )
        ]

    def __str__(self) -> str:
        return self.name


class Split(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="splits")
    name = models.CharField(max_length=50, help_text="Karpathy split name: train, restval, val, test ...")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["dataset", "name"], name="split_unique_per_dataset")]

    def __str__(self) -> str:
        return f"{self.dataset.name}/{self.name}"


class Image(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="images")
    split = models.ForeignKey(Split, on_delete=models.PROTECT, related_name="images")
    key = models.CharField(
        max_length=255,
        help_text="External id as the CxC files write it: the file name, e.g. COCO_val2014_000000032001.jpg.",
    )
    file_path = models.CharField(
        max_length=1000, help_text="Path of the file below the dataset's images_root (or URL prefix)."
    )
    cocoid = models.BigIntegerField(null=True, blank=True, help_text="Source dataset's own image id, if any.")
    width = models.PositiveIntegerField(null=True, blank=True)
    height = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["dataset", "key"], name="image_key_unique_per_dataset")]
        indexes = [models.Index(fields=["split", "id"], name="image_split_idx")]

    def __str__(self) -> str:
        return self.key


class Caption(models.Model):
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="captions")
    image = models.ForeignKey(
        Image, on_delete=models.CASCADE, related_name="captions", help_text="The image this caption was written for."
    )
    key = models.CharField(max_length=255, help_text="External id as CxC writes it, e.g. COCO_val2014:sentid:190268.")
    sentid = models.BigIntegerField(help_text="Karpathy sentence id.")
    text = models.TextField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "key"], name="caption_key_unique_per_dataset"),
            models.CheckConstraint(condition=~Q(text=""), name="caption_text_not_empty"),
        ]
        indexes = [models.Index(fields=["image", "id"], name="caption_image_idx")]

    def __str__(self) -> str:
        return self.key


class EmbeddingSpace(models.Model):
    """One model's vectors for one modality of a dataset, stored as an L2-normalized
    float32 ``.npy`` (read with mmap) plus a text file of item keys in row order."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="embedding_spaces")
    name = models.SlugField(max_length=100)
    modality = models.CharField(max_length=10, choices=Modality.choices)
    model_name = models.CharField(max_length=255, blank=True, help_text="The encoder that produced the vectors.")
    dimension = models.PositiveIntegerField()
    count = models.PositiveIntegerField(help_text="Number of vectors (rows).")
    vectors_path = models.CharField(max_length=1000, help_text="Stored .npy file, float32 (count, dimension).")
    ids_path = models.CharField(max_length=1000, help_text="Stored keys file, one item key per line, in row order.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "name"], name="space_name_unique_per_dataset"),
            models.CheckConstraint(condition=Q(dimension__gt=0) & Q(count__gt=0), name="space_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.dataset.name}:{self.name} ({self.modality}, {self.dimension}-d)"
