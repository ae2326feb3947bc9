"""Shared pytest configuration: fixtures live in `tests/fixtures/` and load as plugins."""

pytest_plugins = [
    "tests.fixtures.prometheus",
    "tests.fixtures.db",
    "tests.fixtures.broker",
    "tests.fixtures.embedder",
    "tests.fixtures.llm_server",
    "tests.fixtures.chromium",
    "tests.fixtures.llama_server",
    "tests.fixtures.otlp_receiver",
    "tests.fixtures.parallel",
]
