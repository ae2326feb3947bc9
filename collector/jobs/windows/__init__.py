"""The windows and groups a trace counts in.

Time windows, a metric's aggregate over one window in one group, bounded label
values, versions and slices."""
