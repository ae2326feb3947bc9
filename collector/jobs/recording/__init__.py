"""What a job has evaluated, and who is told of it.

The outcome cursor keeps a job's per-trace outcomes and their bucket sums in step
with the database; observers hear of each evaluated trace's outcomes."""
