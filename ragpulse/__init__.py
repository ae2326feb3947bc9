"""The ragpulse application: the CLI, its commands and the wiring of the service.

The top layer: it connects the collector (ingest, store, jobs), the exporters and the
evaluators library into the processes `ragpulse run`, `demo`, `evaluate` and the others.
Nothing below it imports it.
"""
