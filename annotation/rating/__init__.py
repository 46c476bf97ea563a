"""Rating: the one policy every claim and submit passes, from every entry point.

``policy`` (who may claim or submit what: role, qualification per dataset and kind, pause,
quiz, quota; it routes between the queue and gold serving), ``storing`` (storing one
rating, a slot's or a gold lease's), ``adaptive`` (adaptive N: whether a pair needs more
ratings), ``progress`` and ``progress_sql`` (a rater's progress as the page shows it).

Imports: ``annotation.people``, ``annotation.quality``, ``annotation.serving`` and below.
Only entry points (the API, the pages, the admin) and the reports import it.
"""
