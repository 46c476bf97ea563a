from django.db import migrations

# The rating cycle's token check that rides ahead of the claim or submit statement in the
# same round trip (annotation.people.authentication.token_check) calls this when the
# token no longer stands as remembered: the error aborts the round trip's implicit
# transaction, so the statement behind it never runs. Its own SQLSTATE tells it from any
# other error (annotation.core.sql.AHEAD_REFUSED).
CREATE = """
CREATE FUNCTION annotation_refuse_ahead() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION 'the statement sent ahead refused what follows it' USING ERRCODE = 'CX401';
END $$;
"""
DROP = "DROP FUNCTION annotation_refuse_ahead();"


def create_function(apps, schema_editor):
    """PostgreSQL only: elsewhere every token request reads its token on its own."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop_function(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0035_slot_rater_active_done")]

    operations = [migrations.RunPython(create_function, drop_function)]
