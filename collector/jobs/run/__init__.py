"""One run of a job: the engine and its steps.

The engine (`IncrementalJob`), scoring new traces, dataset metrics, what a job is, is
given and reports (`definition`), its results stored and published."""
