"""The schema's safety: changing the database while raters rate.

``hot_tables`` (the tables the rating cycle writes on every item: the one list),
``statements`` and ``rules`` (reading recorded SQL and refusing what would rewrite or
long-lock a hot table, pure), ``excused`` (the migrations written before the linter that
break a rule, each with why it stands), ``recording`` (applying migrations while their
SQL is written down, on a scratch database), ``lint`` (the verdict) and ``safe_migrate``
(the migrate command's lock and statement timeouts and its retries).

Imports: Django and ``annotation.models`` (the hot models' tables), nothing else of the
project.
"""
