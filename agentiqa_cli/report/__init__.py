"""The dataset issue report over a results CSV (``agentiqa report``).

``build_report(csv)`` reads the CSV (``rows``), measures every image it names once
(``facts``: CleanVision's image properties, the sharpness detector, content and perceptual
hashes, a thumbnail), finds exact and near duplicates (``duplicates``) and returns a typed
``Report``; ``render_html(report)`` writes it as one self-contained page.
"""

from agentiqa_cli.report.build import Issue, Report, Shown, build_report
from agentiqa_cli.report.html import render_html

__all__ = ["Issue", "Report", "Shown", "build_report", "render_html"]
