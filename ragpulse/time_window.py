"""The time window a drill-down command looks at: `--since DURATION [--until ISO-TIME]`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def window(since: str, until: str | None, *, option: str = "--since") -> tuple[datetime, datetime]:
    """(start, end): the `since` before `until` (an ISO time, UTC if naive; default now).
    Raises `UserError` naming the option for a malformed value."""
    from collector.errors import UserError
    from collector.settings import parse_duration

    try:
        span = parse_duration(since)
    except ValueError as exc:
        raise UserError(f"{option}: {exc}") from None
    end = datetime.now(UTC)
    if until:
        try:
            end = datetime.fromisoformat(until)
        except ValueError:
            raise UserError(f"--until: {until!r} is not an ISO time") from None
        end = end if end.tzinfo else end.replace(tzinfo=UTC)
    return end - timedelta(seconds=span), end
