"""Read queries over what the jobs stored.

Behind `ragpulse explain`, `ragpulse traces` and the report."""
