"""Which judge errors are transient (a later job run retries them) and which are final."""

from __future__ import annotations

from collections.abc import Iterator

from evaluators.judge.errors import TRANSIENT_ERROR_TYPES, JudgeError, is_transient


def test_transient_error_types_are_the_retriable_judge_errors() -> None:
    """Every judge error marked retriable is retried by later runs, and no other."""

    def subclasses(cls: type[JudgeError]) -> Iterator[type[JudgeError]]:
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    retriable = {c.error_type for c in subclasses(JudgeError) if c.retriable}
    final = {c.error_type for c in subclasses(JudgeError) if not c.retriable}
    assert (
        retriable
        == TRANSIENT_ERROR_TYPES
        == {
            "timeout",
            "rate_limited",
            "server_error",
            "connection_error",
        }
    )
    assert all(is_transient(t) for t in retriable)
    assert not any(is_transient(t) for t in final | {"budget", "refusal", "NotRun"})
