"""The review's figures as text (``manage.py review_failures``): per model the reviewed
failures, the share each mark holds for, and the Spearman correlations. Pure."""

from __future__ import annotations

from annotation.evaluation.review.marks import MARK_LABELS

FORM_TITLES = {"agnostic": "every object", "informed": "query's objects"}
METRIC_TITLES = {"CA": "CA", "NCS": "NCS", "CE": "CE", "SD": "SD"}


def _rho(result: dict) -> str:
    if result["rho"] is None:
        return f"{'-':>7} (n {result['n']})"
    return f"{result['rho']:+.3f} (p {result['p']:.3g}, n {result['n']})"


def format_review(report: dict) -> str:
    """``review_report``'s answer as lines of text."""
    lines = [f"Review of evaluation job #{report['job']}: {report['raters_per_failure']} raters per failure"]
    for name, model in report["models"].items():
        lines += [
            "",
            f"{name}: {model['reviewed']} of {model['failures']} failures reviewed, {model['complete']} by every rater",
            f"  {'Spearman rho with the crowd':<28}" + "".join(f"{t:<30}" for t in FORM_TITLES.values()),
        ]
        for metric, title in METRIC_TITLES.items():
            cells = "".join(f"{_rho(model['correlations'][f'{form}_{metric}']):<30}" for form in FORM_TITLES)
            lines.append(f"  {title:<28}{cells}")
        lines.append("  marks (failures a majority of raters marked):")
        for mark, figures in model["marks"].items():
            share = "-" if figures["share"] is None else f"{figures['share']:.0%}"
            lines.append(f"    {MARK_LABELS[mark]:<26}{share:>5}  ({figures['failures']} of {figures['reviewed']})")
    return "\n".join(lines) + "\n"
