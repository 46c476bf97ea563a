"""The upload settings, from the environment (config/settings.py takes them in): what a
file of each kind and a field of imported data may hold, and how long a run's uploaded
files stay. A value out of its range stops start-up with a message naming the variable."""

from django.core.exceptions import ImproperlyConfigured

from config.environment import env, int_at_least

__all__ = [
    "UPLOAD_KEEP_FAILED_DAYS",
    "UPLOAD_MAX_CAPTION_CHARS",
    "UPLOAD_MAX_EMBEDDINGS_BYTES",
    "UPLOAD_MAX_FILENAME_CHARS",
    "UPLOAD_MAX_KARPATHY_BYTES",
    "UPLOAD_MAX_OBJECTS_BYTES",
    "UPLOAD_MAX_PAIRLIST_BYTES",
    "UPLOAD_PRUNE_SECONDS",
]


# Uploads (API, admin forms, CLI copies) are bounded per kind, in bytes; a file over its
# limit is refused while it streams in. The defaults fit COCO: its Karpathy JSON is
# about 140 MB, its 616,767 caption embeddings of 1,024 float32 about 2.5 GB, its largest
# instances file (train2017's object annotations) about 450 MB, and the largest CxC pair
# list a few MB.
def _bytes_setting(name: str, default: int) -> int:
    value = env.int(name, default=default)
    if value < 1:
        raise ImproperlyConfigured(f"{name} must be a number of bytes, at least 1; got {value}")
    return value


UPLOAD_MAX_KARPATHY_BYTES = _bytes_setting("UPLOAD_MAX_KARPATHY_BYTES", 512 * 2**20)
UPLOAD_MAX_EMBEDDINGS_BYTES = _bytes_setting("UPLOAD_MAX_EMBEDDINGS_BYTES", 4 * 2**30)
UPLOAD_MAX_PAIRLIST_BYTES = _bytes_setting("UPLOAD_MAX_PAIRLIST_BYTES", 64 * 2**20)
UPLOAD_MAX_OBJECTS_BYTES = _bytes_setting("UPLOAD_MAX_OBJECTS_BYTES", 1 * 2**30)
# A run's uploaded files go when it succeeds; a failed run's stay this many days for
# diagnosis (0: until the next prune). The prune runs every UPLOAD_PRUNE_SECONDS.
UPLOAD_KEEP_FAILED_DAYS = env.int("UPLOAD_KEEP_FAILED_DAYS", default=7)
if UPLOAD_KEEP_FAILED_DAYS < 0:
    raise ImproperlyConfigured(f"UPLOAD_KEEP_FAILED_DAYS must be 0 or more, got {UPLOAD_KEEP_FAILED_DAYS}")
UPLOAD_PRUNE_SECONDS = int_at_least("UPLOAD_PRUNE_SECONDS", 3600, minimum=1)

# Per-field limits on imported data (characters). A caption far above any real one (COCO's
# longest are a few hundred characters) is refused, not stored: one 150 MB "caption"
# would otherwise fill rows, pages and exports. File names: a Karpathy entry's filename
# and filepath, and the stored name of an uploaded file; file systems and the key
# column hold at most 255.
UPLOAD_MAX_CAPTION_CHARS = int_at_least("UPLOAD_MAX_CAPTION_CHARS", 2000, minimum=1)
UPLOAD_MAX_FILENAME_CHARS = env.int("UPLOAD_MAX_FILENAME_CHARS", default=255)
if not 1 <= UPLOAD_MAX_FILENAME_CHARS <= 255:
    raise ImproperlyConfigured(
        f"UPLOAD_MAX_FILENAME_CHARS must be from 1 to 255 (what file systems and the key column hold), "
        f"got {UPLOAD_MAX_FILENAME_CHARS}"
    )
