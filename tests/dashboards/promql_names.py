"""The series names a PromQL expression reads: a small tokenizer, enough for the shipped
panels and rules (promtool checks syntax but prints no parse tree to read names from).

It skips what is not a series name: string literals, label matchers (`{...}`, reading a
`__name__="x"` matcher as the name x), range and subquery brackets (`[5m]`, `[1h:1m]`),
numbers and durations (`offset 5m`), Grafana variables (`$tenant`, `${datasource}`,
`$__rate_interval`), the label lists of `by`/`without`/`on`/`ignoring`/`group_left`/
`group_right`, keywords (`and`, `or`, `unless`, `bool`, `offset`, `atan2`, `inf`, `nan`,
`@ start()`), aggregations and functions. A word followed by `(` must be a PromQL function
or aggregation: an unknown one is an error rather than a guess.
"""

from __future__ import annotations

import re

_AGGREGATIONS = """sum min max avg group stddev stdvar count count_values bottomk topk
    quantile limitk limit_ratio"""
_FUNCTIONS = """abs absent absent_over_time acos acosh asin asinh atan atanh avg_over_time
    ceil changes clamp clamp_max clamp_min cos cosh count_over_time day_of_month day_of_week
    day_of_year days_in_month deg delta deriv double_exponential_smoothing exp floor
    histogram_avg histogram_count histogram_fraction histogram_quantile histogram_stddev
    histogram_stdvar histogram_sum holt_winters hour idelta increase info irate label_join
    label_replace last_over_time ln log10 log2 mad_over_time max_over_time min_over_time
    minute month pi predict_linear present_over_time quantile_over_time rad rate resets
    round scalar sgn sin sinh sort sort_by_label sort_by_label_desc sort_desc sqrt
    stddev_over_time stdvar_over_time sum_over_time tan tanh time timestamp vector year
    start end"""
"""PromQL's functions (Prometheus 3), `start()`/`end()` of the `@` modifier among them."""
_GROUPING = "by without on ignoring group_left group_right"
_KEYWORDS = "and or unless bool offset atan2 inf nan"
AGGREGATIONS = frozenset(_AGGREGATIONS.split())
FUNCTIONS = frozenset(_FUNCTIONS.split())
GROUPING = frozenset(_GROUPING.split())
KEYWORDS = frozenset(_KEYWORDS.split())

_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_NUMBER = re.compile(
    r"(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"(?:(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*)?"
)
_VARIABLE = re.compile(r"\$(?:\{[^}]*\}|\w+)|\[\[\w+\]\]")
_NAME_MATCHER = re.compile(r"""__name__\s*(=~|!~|!=|=)\s*(["'`])((?:\\.|(?!\2).)*)\2""")


def _string_end(expr: str, i: int) -> int:
    """Index after the string literal starting at `i` (backslash escapes; none in `...`)."""
    quote, j = expr[i], i + 1
    while j < len(expr) and expr[j] != quote:
        j += 2 if expr[j] == "\\" and quote != "`" else 1
    if j >= len(expr):
        raise ValueError(f"unterminated string in {expr!r}")
    return j + 1


def _closing(expr: str, i: int, close: str) -> int:
    """Index of the bracket closing the one at `i`, skipping strings inside."""
    opening, depth, j = expr[i], 0, i
    while j < len(expr):
        c = expr[j]
        if c in "\"'`":
            j = _string_end(expr, j)
            continue
        if c == opening:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise ValueError(f"unbalanced {opening!r} in {expr!r}")


def _matcher_names(body: str) -> set[str]:
    names = set()
    for op, _quote, value in _NAME_MATCHER.findall(body):
        if op != "=":
            raise ValueError(f"a __name__ {op} matcher selects names by pattern: {body!r}")
        names.add(value)
    return names


def _next(expr: str, i: int) -> int:
    while i < len(expr) and expr[i].isspace():
        i += 1
    return i


def _word_at(expr: str, i: int) -> str:
    found = _IDENT.match(expr, i)
    return found.group().lower() if found else ""


def series_names(expr: str) -> set[str]:
    """Every series name `expr` selects."""
    names: set[str] = set()
    i = 0
    while i < len(expr):
        c = expr[i]
        if c in "\"'`":
            i = _string_end(expr, i)
        elif c == "{":
            end = _closing(expr, i, "}")
            names |= _matcher_names(expr[i + 1 : end])
            i = end + 1
        elif c == "[" and not expr.startswith("[[", i):
            i = _closing(expr, i, "]") + 1
        elif (variable := _VARIABLE.match(expr, i)) is not None:
            i = variable.end()
        elif (number := _NUMBER.match(expr, i)) is not None:
            i = number.end()
        elif (ident := _IDENT.match(expr, i)) is not None:
            word, i = ident.group(), ident.end()
            after = _next(expr, i)
            following = expr[after : after + 1]
            lowered = word.lower()
            if lowered in GROUPING:
                if following == "(":
                    i = _closing(expr, after, ")") + 1
            elif lowered in KEYWORDS:
                pass
            elif following == "(":
                if word not in FUNCTIONS | AGGREGATIONS:
                    raise ValueError(f"unknown PromQL function {word!r} in {expr!r}")
            elif word in AGGREGATIONS and _word_at(expr, after) in GROUPING:
                pass  # `sum by (x) (...)`: the grouping comes before the argument
            else:
                names.add(word)
        else:
            i += 1
    return names


_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*\w+\s*\)\s*$", re.S)


def variable_series(query: str) -> set[str]:
    """The series a Grafana Prometheus variable query reads: `label_values(selector,
    label)`'s selector, or a PromQL `query_result(...)`/plain expression."""
    if (found := _LABEL_VALUES.match(query)) is not None:
        return series_names(found.group(1))
    if query.strip().startswith("label_values(") or query.strip().startswith("label_names("):
        return set()  # every series' labels: no series named
    inner = re.match(r"^\s*query_result\((.*)\)\s*$", query, re.S)
    return series_names(inner.group(1) if inner else query)


_STRING = r'"((?:\\.|[^"\\])*)"'
_QUERIES = re.compile(
    rf"\bquery\s+{_STRING}"  # {{ query "expr" }}
    rf"|\bprintf\s+{_STRING}[^|{{}}]*\|\s*query\b"  # {{ printf "expr" args | query }}
)
_VERB = re.compile(r"%[-+# 0-9.]*[a-zA-Z%]")


def template_queries(text: str) -> list[str]:
    """PromQL of the `query` calls in an alert's Go template (`{{ query "..." }}`, or
    `{{ printf "...%q..." $labels.x | query }}`): printf verbs become a placeholder value."""
    out = []
    for direct, formatted in _QUERIES.findall(text):
        unquoted = re.sub(r"\\(.)", r"\1", direct or formatted)
        out.append(_VERB.sub(lambda m: '"x"' if m.group() == "%q" else "x", unquoted))
    return out
