"""Quality control: gold pairs and their serving (``gold``), rater pauses (``pauses``),
the exclusion of a rater's ratings (``exclusion``) and the qualification quiz (``quiz``).
Gold serving and the exclusion are mechanisms: they import nothing of the rating policy,
the crowd, the quiz or onboarding (pyproject.toml [tool.importlinter])."""
