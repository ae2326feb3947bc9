"""Typed judge failures: each has an `error_type` (what `Failed.error_type` reports) and says
whether retrying the same request can help (timeouts, 429, 5xx, dropped connections)."""

from __future__ import annotations

from evaluators.errors import EvaluatorError


class JudgeError(EvaluatorError):
    """A judge request that produced no usable answer."""

    error_type = "judge_error"


class JudgeTimeout(JudgeError):
    error_type = "timeout"
    retriable = True


class JudgeRateLimited(JudgeError):
    error_type = "rate_limited"
    retriable = True


class JudgeServerError(JudgeError):
    error_type = "server_error"
    retriable = True


class JudgeConnectionError(JudgeError):
    error_type = "connection_error"
    retriable = True


class JudgeRequestError(JudgeError):
    """The provider rejected the request (bad parameters, authentication, unknown model)."""

    error_type = "bad_request"


class JudgeTruncated(JudgeError):
    """The reply stopped at the token limit (finish reason `length`)."""

    error_type = "truncated"


class JudgeEmptyResponse(JudgeError):
    """No choices, or a choice without text."""

    error_type = "empty_response"


class JudgeRefusal(JudgeError):
    """The model declined to judge (refusal field, content filter, or a refusal sentence)."""

    error_type = "refusal"


class JudgeInvalidOutput(JudgeError):
    """The reply is not JSON (also after the one repair request)."""

    error_type = "invalid_json"


class JudgeSchemaError(JudgeInvalidOutput):
    """The reply is JSON but not of the requested shape."""

    error_type = "schema_mismatch"


class JudgeOutOfRange(JudgeError):
    """A number outside its allowed range (e.g. a relevance grade of 3 on a 0-2 scale)."""

    error_type = "out_of_range"


class BudgetExceeded(JudgeError):
    """The configured call or spending budget is used up; metrics report Skipped("budget")."""

    error_type = "budget"


TRANSIENT_ERROR_TYPES = frozenset(
    cls.error_type
    for cls in (JudgeTimeout, JudgeRateLimited, JudgeServerError, JudgeConnectionError)
)
"""The `Failed.error_type`s of retriable judge errors: a later run may well succeed where
these failed (the judge was slow, overloaded or away). Every other type is final: the
same request gets the same schema mismatch, refusal or exhausted budget again."""


def is_transient(error_type: str) -> bool:
    """True for a `Failed.error_type` worth retrying in a later run (`TRANSIENT_ERROR_TYPES`)."""
    return error_type in TRANSIENT_ERROR_TYPES
