"""`UserError`: a problem the user can fix, reported by the CLI as one line, exit code 2.

Any command (or anything a command calls) raises it with a message that says what is wrong
and what to do; `ragpulse.cli.main` catches it once and prints `ragpulse: <message>` on
stderr without a traceback. Bugs keep their tracebacks: raise this only for conditions of
the user's environment, input or configuration (a database that does not exist, a server
that cannot be reached, a file that is not there).
"""

from __future__ import annotations

EXIT_USER_ERROR = 2


class UserError(Exception):
    """Something the user can fix; the message is one line that says what and how."""


def one_line(text: object) -> str:
    """`text` with every run of whitespace (newlines and tabs included) as one space."""
    return " ".join(str(text).split())
