"""Scheduled evaluation jobs: incremental windows over stored traces -> metric_results."""
