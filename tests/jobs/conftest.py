"""Fixtures of the jobs tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fixtures.db import create_postgres_database, drop_postgres_database


@pytest.fixture
def two_databases(postgres_template: str) -> Iterator[tuple[str, str]]:
    """Two freshly migrated PostgreSQL databases: the sharding tests' fleet works on the
    first, the single worker it is compared with on the second."""
    urls = [create_postgres_database(template=postgres_template) for _ in range(2)]
    try:
        yield urls[0], urls[1]
    finally:
        for url in urls:
            drop_postgres_database(url)
