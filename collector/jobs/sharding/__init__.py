"""A job's run split by shard across processes.

Leases on the shards, kept alive while a run holds them."""
