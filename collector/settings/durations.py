"""Durations as the settings write them (`30s`, `15m`, `1h`, `7d`, `2w`): the windows,
retentions and spans of every group, and the code that uses them, parse them alike."""

from __future__ import annotations


def parse_duration(text: str) -> float:
    """`30s`, `15m`, `1h`, `7d` -> seconds; raises ValueError on anything else."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    if len(text) < 2 or text[-1] not in units or not text[:-1].isdigit() or int(text[:-1]) <= 0:
        raise ValueError(f"{text!r} is not a duration like 30s, 15m, 1h, 7d")
    return float(int(text[:-1]) * units[text[-1]])
