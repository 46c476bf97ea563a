"""Quality control.

``gold`` (gold files, their checks and uploads), ``quiz`` (the qualification quiz) and
``quiz_review`` (what a finished attempt shows its rater),
``pauses`` (an admin's pause and lift), ``exclusion`` (excluding a rater's ratings with
top-up to N, and undoing it), ``flags`` and ``flag_settings`` (rater flags),
``participants`` (the crowd's quality table), ``aggregation``, ``group_stats`` (pure numpy),
``rater_effects`` (the rater-effects model, pure numpy), with ``censored_raters`` (its
raters re-estimated with the slider's ends censored) and ``score_grid`` (pair scores on a
grid of the scale, both pure numpy), ``rater_fits`` (fitting it to a dataset),
``adaptive_rule``, ``adaptive_solver`` (adaptive N, pure numpy), ``adaptive_plans`` and
``tasks``.

Imports: ``annotation.serving`` and below; never the rating policy or people
(pyproject.toml [tool.importlinter]).
"""
