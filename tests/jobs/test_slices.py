"""A trace's slice dimensions: tags first, the model field and the question's script after."""

from __future__ import annotations

import pytest

from collector.jobs.windows.slices import DEFAULT_DIMENSIONS, language_of, slice_values
from collector.settings import ConfigError, load_settings


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Как оформить возврат?", "ru"),
        ("How do I get a refund?", "en"),
        ("Где скачать PDF?", "ru"),  # mostly Cyrillic letters
        ("Ошибка 404 on the API page", "en"),  # mostly Latin letters
        ("Ёлка", "ru"),
        ("12345 ?!", "other"),
        ("", "other"),
        (None, "other"),
    ],
)
def test_language_of_the_question(text: str | None, language: str) -> None:
    assert language_of(text) == language


def test_tags_win_and_fields_fill_in() -> None:
    dims = DEFAULT_DIMENSIONS
    assert slice_values(
        {"tenant": "acme", "version": "v7", "language": "kk"},
        model="gpt-4o",
        question="Как дела?",
        dimensions=dims,
    ) == {"tenant": "acme", "model": "gpt-4o", "version": "v7", "language": "kk"}
    assert slice_values(
        {"model": "tagged"}, model="field", question="Hi", dimensions=("model", "language")
    ) == {"model": "tagged", "language": "en"}
    assert slice_values(None, model=None, question="Hi", dimensions=("tenant", "model")) == {}


def test_values_are_cleaned_and_cut_like_label_values() -> None:
    got = slice_values(
        {"tenant": "a\nb\x00", "version": "v" * 300},
        model=None,
        question=None,
        dimensions=("tenant", "version"),
        max_length=32,
    )
    assert got["tenant"] == "a b"
    assert len(got["version"]) <= 32


def test_slice_settings_are_validated() -> None:
    assert load_settings().slices.dimensions == list(DEFAULT_DIMENSIONS)
    with pytest.raises(ConfigError, match="twice"):
        load_settings(slices={"dimensions": ["tenant", "tenant"]})
    with pytest.raises(ConfigError, match="duration"):
        load_settings(slices={"baseline": "a week"})
