"""The jobs a deployment runs, one module each.

Each module has `NAME`, `METRICS` and `definition(settings) -> JobDefinition`: which
metrics over which stored traces; the scheduler's `JOB_MODULES` lists them. A job
imports the run machinery below it, never a sibling job."""
