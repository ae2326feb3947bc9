"""Instrumentation conventions: how each OpenTelemetry instrumentation family names a RAG
request's parts (question, answer, retrieved documents, session, model, usage) on its spans.

One module per convention, each a `Convention` (`base`), detected per span; `registry`
lists them in their precedence order. Adding a convention is a new module and one line in
`registry.CONVENTIONS`.
"""
