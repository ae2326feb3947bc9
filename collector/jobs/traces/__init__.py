"""Which stored traces a job reads, and as what.

Its candidates, its shard's scope, the light rows a `Sample` is built from, and the
service's seams typed."""
