from django.db import migrations

# The remembered API token is gone (its A/B saved less than the 10 % of CPU per cycle a
# shortcut must buy: docs/architecture.md, "Framework shortcuts"), and with it the check
# sent ahead of the rating cycle's first statement, the one caller of this function.
# Every token request is looked up again (annotation.people.authentication).
#
# RunPython, not RunSQL, as 0036 created it: the function is PostgreSQL's only, and the
# embedded mode migrates SQLite, which knows no functions. Reversed, it is created again
# exactly as 0036 created it, so `migrate annotation 0036` gives back that schema.
CREATE = """
CREATE FUNCTION annotation_refuse_ahead() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION 'the statement sent ahead refused what follows it' USING ERRCODE = 'CX401';
END $$;
"""
DROP = "DROP FUNCTION annotation_refuse_ahead();"


def drop_function(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


def create_function(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0036_token_refused_function")]

    operations = [migrations.RunPython(drop_function, create_function)]
