"""Quality control.

``gold`` (gold files, their checks and uploads), ``quiz`` (the qualification quiz) and
``quiz_review`` (what a finished attempt shows its rater),
``pauses`` (an admin's pause and lift), ``exclusion`` (excluding a rater's ratings with
top-up to N, and undoing it), ``flags`` and ``flag_settings`` (rater flags),
``participants`` (the crowd's quality table), ``aggregation``, ``group_stats`` (pure numpy),
``rater_effects`` (the rater-effects model, pure numpy), ``rater_fits`` (fitting it to a
dataset) and ``tasks``.

Imports: ``annotation.serving`` and below; never the rating policy or people
(pyproject.toml [tool.importlinter]).
"""
