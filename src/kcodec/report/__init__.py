"""The HTML report of a pipeline run: ``render_report(DIR)`` reads the aggregate tables the pipeline
wrote (:mod:`kcodec.pipeline`) and returns one self-contained page: plots drawn by matplotlib and
embedded as inline SVG (text as paths, no fonts, scripts, stylesheets or images fetched from
anywhere), tables and the text summary. Reading needs pyarrow, drawing matplotlib; no Spark.
"""

from __future__ import annotations

from kcodec.report.load import ReportInputError, load_tables
from kcodec.report.page import render_report

__all__ = ["ReportInputError", "load_tables", "render_report"]
