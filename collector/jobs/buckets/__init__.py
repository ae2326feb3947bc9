"""Per-minute sums and bins of the jobs' scores.

`job_buckets` and `job_bucket_bins`: kept, copied, framed in memory, and the windows'
aggregates made from them."""
