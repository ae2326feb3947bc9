"""The command-line reference: every command and sub-command of `build_parser()` with
its usage line, its help and a table of its arguments, read from argparse itself."""

from __future__ import annotations

import argparse

from ragpulse.cli import build_parser
from ragpulse.docs.markdown import BANNER, code, table

INTRO = """# Command line

Every command of `ragpulse` and its arguments, read from the argument parser
(`ragpulse/cli.py`, one module per command in `ragpulse/commands/`). The options before
the command (`--config`, `--log-level`) apply to all of them. `ragpulse COMMAND --help`
prints the same.

"""


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:  # type: ignore[type-arg]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def commands(
    parser: argparse.ArgumentParser | None = None, path: tuple[str, ...] = ("ragpulse",)
) -> list[tuple[tuple[str, ...], str, argparse.ArgumentParser]]:
    """(command path, help, parser) of every command, depth first, the root first."""
    parser = parser or build_parser()
    out = [(path, parser.description or "", parser)]
    sub = _subparsers(parser)
    if sub is not None:
        helps = {choice.dest: choice.help or "" for choice in sub._choices_actions}
        for name, child in sub.choices.items():
            for child_path, text, grandchild in commands(child, (*path, name)):
                out.append(
                    (child_path, helps.get(name, "") if child is grandchild else text, grandchild)
                )
    return out


def _flag(action: argparse.Action) -> str:
    if action.option_strings:
        names = ", ".join(action.option_strings)
        if action.nargs == 0:
            return names
        return f"{names} {action.metavar or action.dest.upper()}"
    return str(action.metavar or action.dest)


def _default(action: argparse.Action) -> str:
    if action.nargs == 0 or action.default in (None, argparse.SUPPRESS, False):
        return ""
    if isinstance(action.default, list | tuple):
        return ",".join(str(v) for v in action.default)
    return str(action.default)


def arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The parser's own arguments (no --help, no sub-command selector)."""
    return [
        a
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
    ]


def flags() -> list[tuple[str, str]]:
    """(command, option string) of every option: what the test looks for on the page."""
    return [
        (" ".join(path), option)
        for path, _, parser in commands()
        for action in arguments(parser)
        for option in action.option_strings
    ]


def render() -> str:
    parts = [BANNER, INTRO]
    for path, text, parser in commands():
        name = " ".join(path)
        parts.append(f"## `{name}`\n\n")
        if text:
            parts.append(" ".join(text.split()) + "\n\n")
        usage = " ".join(parser.format_usage().split())
        parts.append(f"```text\n{usage}\n```\n\n")
        sub = _subparsers(parser)
        if sub is not None:
            parts.append(
                "Commands: " + ", ".join(code(f"{name} {c}") for c in sub.choices) + "\n\n"
            )
        rows = [
            [
                code(_flag(a)),
                a.help or "",
                code(_default(a)) if _default(a) else "",
                ", ".join(map(str, a.choices)) if a.choices else "",
            ]
            for a in arguments(parser)
        ]
        if rows:
            parts.append(table(("argument", "meaning", "default", "choices"), rows) + "\n")
    return "".join(parts).rstrip("\n") + "\n"
