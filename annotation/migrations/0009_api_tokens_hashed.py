"""API tokens move from DRF's authtoken table (plain keys, no expiry) to django-rest-knox
(SHA-512 digests, an expiry). Existing keys keep working, so scripts need no change,
until they expire API_TOKEN_TTL_HOURS after this migration; then the plain-key table is
dropped. Going back leaves the hashed tokens in place and no plain table: the plain
keys cannot be recovered from their digests."""

from django.conf import settings
from django.db import migrations
from django.utils import timezone
from knox.crypto import hash_token
from knox.settings import CONSTANTS

PLAIN_TABLE = "authtoken_token"


def copy_plain_tokens(apps, schema_editor) -> int:
    """Store every key of ``authtoken_token`` (if that table exists) as a knox token
    and drop the table; returns how many were copied. Uses ``schema_editor.connection``."""
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if PLAIN_TABLE not in connection.introspection.table_names(cursor):
            return 0  # a database created after rest_framework.authtoken left INSTALLED_APPS
        qn = connection.ops.quote_name
        cursor.execute(f"SELECT {qn('key')}, {qn('user_id')} FROM {qn(PLAIN_TABLE)}")
        rows = cursor.fetchall()
    auth_token = apps.get_model("knox", "AuthToken")
    expiry = timezone.now() + settings.REST_KNOX["TOKEN_TTL"]
    auth_token.objects.bulk_create(
        [
            auth_token(
                digest=hash_token(key), token_key=key[: CONSTANTS.TOKEN_KEY_LENGTH], user_id=user_id, expiry=expiry
            )
            for key, user_id in rows
        ]
    )
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {qn(PLAIN_TABLE)}")
    return len(rows)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0008_run_upload_state"),
        ("knox", "0009_extend_authtoken_field"),
    ]

    operations = [migrations.RunPython(copy_plain_tokens, reverse_code=migrations.RunPython.noop)]
