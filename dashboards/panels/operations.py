# ruff: noqa: E501  (PromQL reads best on one line)
"""The operations dashboard's own sections: is the service keeping up?

Ingest (consumed, stored, invalid, lag, sampled, a stuck consumer, texts the embedding
model cannot read), the OTLP traces per instrumentation convention and the share arriving
without question, answer or contexts (`RagpulseOtlpContentMissing`), the scheduled jobs (runs, duration, time since the last success) and
the group labels' values (seen, kept, exported, folded into `other`). The judge's calls
are the judge section's (`judge.calls`).
"""

from __future__ import annotations

from dashboards.panels.common import RATE, lines
from dashboards.panels.layout import Cell, Section


def ingest() -> Section:
    first = [
        lines(
            "Ingest rate",
            "Messages consumed per second by topic, and traces stored.",
            [
                (
                    f"sum by (topic) (rate(ragpulse_traces_consumed_total[{RATE}]))",
                    "consumed {{topic}}",
                ),
                (f"sum(rate(ragpulse_traces_stored_total[{RATE}]))", "stored"),
            ],
            "ops",
        ),
        lines(
            "Invalid messages by reason",
            "Dead-lettered messages per second by reason; inspect dead_letters. Field "
            "warnings: stored traces whose optional field did not fit (kept raw under "
            "metadata._invalid).",
            [
                (f"sum by (reason) (rate(ragpulse_traces_invalid_total[{RATE}]))", "{{reason}}"),
                (
                    f"sum by (field) (rate(ragpulse_traces_field_warnings_total[{RATE}]))",
                    "field warning {{field}}",
                ),
            ],
            "ops",
        ),
        lines(
            "Consumer lag",
            "Messages not yet consumed, by topic.",
            [("sum by (topic) (ragpulse_consumer_lag)", "{{topic}}")],
        ),
    ]
    second = [
        lines(
            "Sampled traces",
            "Traces selected per second by purpose.",
            [(f"sum by (purpose) (rate(ragpulse_traces_sampled_total[{RATE}]))", "{{purpose}}")],
            "ops",
        ),
        lines(
            "Consumer stuck",
            "Seconds the consumer has kept failing the same batch (0 = healthy; /readyz is "
            "503 past kafka.unready_after_failures) and how many times it failed.",
            [
                ("max(ragpulse_consumer_stuck_seconds)", "stuck seconds"),
                ("max(ragpulse_consumer_batch_failures)", "failures of the batch"),
            ],
        ),
        lines(
            "Texts outside the embedding model's scripts",
            "Share of embedded texts in a script the configured model was not trained on "
            "(e.g. Cyrillic with an English-only model): above 0.5, similarity metrics are "
            "unreliable; choose a multilingual model.",
            [("max by (model) (ragpulse_embedding_script_mismatch_ratio)", "{{model}}")],
            "percentunit",
        ),
    ]
    return Section("Ingest", [[Cell(p) for p in first], [Cell(p) for p in second]])


def otlp() -> Section:
    line = [
        lines(
            "OTLP traces by convention",
            "OTLP traces per second by the instrumentation convention their spans were read "
            "with (counted once, when the root span is stored; a trace of two libraries "
            "counts under both). none: spans of no known convention (other services on the "
            "topic, or an instrumentation ragpulse does not read; `ragpulse inspect`).",
            [
                (
                    f"sum by (convention) (rate(ragpulse_otlp_traces_total[{RATE}]))",
                    "{{convention}}",
                )
            ],
            "ops",
        ),
        lines(
            "OTLP traces without question, answer or contexts",
            "Share of each convention's traces missing a field the quality metrics need "
            "(contexts: no document with its text). Near 100% for answers or contexts: "
            "content capture is off in the app (RagpulseOtlpContentMissing names the "
            "setting).",
            [
                (
                    f"sum by (convention, missing) (rate(ragpulse_otlp_traces_incomplete_total[{RATE}])) / on (convention) group_left () sum by (convention) (rate(ragpulse_otlp_traces_total[{RATE}]))",
                    "{{convention}} without {{missing}}",
                )
            ],
            "percentunit",
        ),
    ]
    return Section("OTLP traces", [[Cell(p, w=12) for p in line]])


def jobs() -> Section:
    line = [
        lines(
            "Job runs by status",
            "Runs per minute by job and status (error: see the logs).",
            [
                (
                    f"sum by (job, status) (rate(ragpulse_job_runs_total[{RATE}])) * 60",
                    "{{job}} {{status}}",
                )
            ],
        ),
        lines(
            "Job duration",
            "Mean duration of job runs.",
            [
                (
                    f"sum by (job) (rate(ragpulse_job_duration_seconds_sum[{RATE}])) / sum by (job) (rate(ragpulse_job_duration_seconds_count[{RATE}]))",
                    "{{job}}",
                )
            ],
            "s",
        ),
        lines(
            "Time since last success",
            "Seconds since each job last succeeded.",
            [("time() - ragpulse_job_last_success_timestamp_seconds", "{{job}}")],
            "s",
        ),
    ]
    return Section("Scheduled jobs", [[Cell(p) for p in line]])


def label_values() -> Section:
    line = [
        lines(
            "Label values",
            "Distinct values of each group label in the jobs' longest window (seen), those "
            "that keep series of their own (kept, at most labels.max_values) and in the "
            "exported quality series ('other' included). Seen above kept: the rest is "
            "folded into 'other'.",
            [
                ("max by (label) (ragpulse_label_values_seen)", "seen {{label}}"),
                ("max by (label) (ragpulse_label_values_kept)", "kept {{label}}"),
                ("max by (label) (ragpulse_label_values_exported)", "exported {{label}}"),
            ],
        ),
        lines(
            "Label values folded",
            "Values folded into 'other' per job run past labels.max_values, and quality "
            "series the exporter left out past the bound (RagpulseLabelValuesFolded).",
            [
                (
                    f"sum by (label) (increase(ragpulse_label_values_folded_total[{RATE}]))",
                    "folded {{label}}",
                ),
                ("max by (label) (ragpulse_label_values_dropped)", "dropped by exporter {{label}}"),
            ],
        ),
    ]
    return Section("Label values", [[Cell(p, w=12) for p in line]])
