"""Format values the way Grafana's common units show them (`percentunit`, `s`, `ops`, ...)."""

from __future__ import annotations

import math

_SI = ((1e12, " T"), (1e9, " B"), (1e6, " M"), (1e3, " K"))
_RATES = {
    "ops": "ops/s",
    "reqps": "req/s",
    "rps": "req/s",
    "wps": "wr/s",
    "rdps": "rd/s",
    "cps": "c/s",
    "iops": "io/s",
}


def _number(value: float, decimals: int | None) -> str:
    if decimals is not None:
        return f"{value:.{decimals}f}"
    magnitude = abs(value)
    if magnitude == 0 or magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    # three significant digits for small values
    digits = min(6, 2 - math.floor(math.log10(magnitude)))
    return f"{value:.{digits}f}"


def _short(value: float, decimals: int | None) -> str:
    for scale, suffix in _SI:
        if abs(value) >= scale:
            return _number(value / scale, decimals) + suffix
    return _number(value, decimals)


def _seconds(value: float, decimals: int | None) -> str:
    magnitude = abs(value)
    if magnitude == 0:
        return "0 s"
    if magnitude < 1e-3:
        return _number(value * 1e6, decimals) + " µs"
    if magnitude < 1:
        return _number(value * 1e3, decimals) + " ms"
    if magnitude < 60:
        return _number(value, decimals) + " s"
    if magnitude < 3600:
        return _number(value / 60, decimals) + " min"
    if magnitude < 86400:
        return _number(value / 3600, decimals) + " h"
    return _number(value / 86400, decimals) + " day"


def _bytes(value: float, decimals: int | None) -> str:
    for power, suffix in ((4, " TiB"), (3, " GiB"), (2, " MiB"), (1, " KiB")):
        if abs(value) >= 1024**power:
            return _number(value / 1024**power, decimals) + suffix
    return _number(value, decimals) + " B"


def format_value(value: float, unit: str | None, decimals: int | None = None) -> str:
    """`value` in `unit` (Grafana unit ids); unknown units print the number and the id."""
    if unit in (None, "", "short", "none"):
        return _short(value, decimals) if unit != "none" else _number(value, decimals)
    if unit == "percentunit":
        return _number(value * 100, decimals) + "%"
    if unit == "percent":
        return _number(value, decimals) + "%"
    if unit == "s":
        return _seconds(value, decimals)
    if unit == "ms":
        return _seconds(value / 1000, decimals)
    if unit in ("bytes", "decbytes"):
        return _bytes(value, decimals)
    if unit == "currencyUSD":
        return "$" + _short(value, decimals if decimals is not None else 2)
    if unit in _RATES:
        return _short(value, decimals) + " " + _RATES[unit]
    if unit.startswith("suffix:"):
        return _short(value, decimals) + unit[len("suffix:") :]
    return _short(value, decimals) + " " + unit


_LABELS = {"percentunit": "%", "percent": "%", "bytes": "bytes", "decbytes": "bytes"}


def unit_label(unit: str | None) -> str:
    """The unit as an axis title says it ("%", "ms", "req/s"); "" for a plain number."""
    if unit in (None, "", "short", "none"):
        return ""
    if unit == "currencyUSD":
        return "USD"
    if unit.startswith("suffix:"):
        return unit[len("suffix:") :].strip()
    return _LABELS.get(unit) or _RATES.get(unit) or unit
