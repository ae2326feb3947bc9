"""Scheduled evaluation jobs, in folders that read as the flow.

Incremental windows over stored traces -> metric_results. Top-down (the tree is in
docs/ARCHITECTURE.md): the scheduler, the jobs (`catalog/`), one run (`run/`), its
drift detectors and outcome cursor (`drift/`, `recording/`), the bucket sums
(`buckets/`), the per-trace outcomes (`outcomes/`), windows and the traces read.
"""
