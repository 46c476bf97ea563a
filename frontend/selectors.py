"""Reads for the pages."""

from annotation.models import Caption, Dataset, Image
from annotation.queue import Item, image_url
from frontend.instructions import level_name
from frontend.models import WorkedExample


def _caption_item(caption: Caption) -> Item:
    return Item(type="caption", text=caption.text)


def _image_item(dataset: Dataset, image: Image) -> Item:
    url = image_url(
        dataset=dataset.name,
        images_root=dataset.images_root,
        image_url_prefix=dataset.image_url_prefix,
        key=image.key,
        file_path=image.file_path,
    )
    return Item(type="image", url=url, width=image.width, height=image.height)


def worked_example_list(*, dataset: Dataset, kind: str) -> list[dict]:
    """Active examples of one kind, in order, as the template shows them: their items (the
    same shape the rating page gets for a claimed pair) and the name of their reference
    level (never the number)."""
    examples = WorkedExample.objects.filter(dataset=dataset, kind=kind, active=True).select_related(
        "caption_a", "caption_b", "image_a", "image_b"
    )
    shown = []
    for example in examples:
        items = [_caption_item(c) for c in (example.caption_a, example.caption_b) if c is not None]
        items += [_image_item(dataset, i) for i in (example.image_a, example.image_b) if i is not None]
        shown.append(
            {"items": items, "level_name": level_name(example.reference_score), "explanation": example.explanation}
        )
    return shown
