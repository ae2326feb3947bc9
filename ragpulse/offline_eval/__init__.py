"""Pieces of `ragpulse evaluate`: read a JSONL dataset of traces (`dataset`), check that
the asked metrics can run on it (`needs`), render the results (`render`: table, SPEC §5
JSON), compare the judge with human labels (`labels`) and record the run (`runs`).
Import everything from here.
"""

from __future__ import annotations

from ragpulse.offline_eval.dataset import (
    MAX_LINE_BYTES,
    MAX_REPORTED_LINES,
    Dataset,
    DatasetError,
    InvalidLine,
    read_dataset,
)
from ragpulse.offline_eval.labels import (
    add_label_results,
    compare_judges_with_labels,
    render_agreement_table,
)
from ragpulse.offline_eval.needs import missing_fields, required_fields
from ragpulse.offline_eval.render import render_table, skip_notes, to_json
from ragpulse.offline_eval.runs import RunRecorder, combined_signature, usable_database

__all__ = [
    "MAX_LINE_BYTES",
    "MAX_REPORTED_LINES",
    "Dataset",
    "DatasetError",
    "InvalidLine",
    "RunRecorder",
    "add_label_results",
    "combined_signature",
    "compare_judges_with_labels",
    "missing_fields",
    "read_dataset",
    "render_agreement_table",
    "render_table",
    "required_fields",
    "skip_notes",
    "to_json",
    "usable_database",
]
