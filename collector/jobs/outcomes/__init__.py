"""The stored per-trace outcomes: codec, writes, retries.

The one codec of the stored outcome form (`job_outcomes.outcomes`), the bulk writes
to `job_outcomes`, and transient judge failures waiting for a retry."""
