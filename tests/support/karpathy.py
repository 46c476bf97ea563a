"""A Karpathy-format image entry, for the import, upload and job tests."""


def image_entry(cocoid=32001, split="val", sentids=(190268, 315773), filename=None, filepath="val2014"):
    filename = filename or f"COCO_val2014_{cocoid:012d}.jpg"
    return {
        "filepath": filepath,
        "filename": filename,
        "split": split,
        "cocoid": cocoid,
        "sentids": list(sentids),
        "sentences": [{"raw": f"caption {s}", "tokens": ["caption"], "sentid": s} for s in sentids],
    }
