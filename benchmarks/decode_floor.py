"""Where the ingest CPU per trace goes, stage by stage, against the floors under it.

Issue 21 asks ingest >= 0.5x a bare kafka-python poll per process. This measures, in one
process on 5,000 generated ~8 KB Russian traces (the consumer's GC settings: start-up heap
frozen, young threshold 10,000), the best of 5 passes per stage:

- the stages a trace goes through on the consumer: orjson parse, the structure check
  (depth, duplicate keys), validation into a `TraceRecord`, the COPY line;
- floors no Python decoder gets under: UTF-8 decoding of the message (every JSON reader
  validates it and builds `str`s), UTF-8 encoding of it back (the COPY line), and the
  parse alone;
- with `--msgspec` (when the package is installed; not a dependency): a schema-typed
  decoder in C (msgspec Structs, types checked while parsing), to size what replacing the
  Python validation with a compiled one could save.

    .venv/bin/python -m benchmarks.decode_floor
    .venv/bin/python -m benchmarks.decode_floor --msgspec   # after `pip install msgspec`
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from collector.ingest.decode.limits import check_structure  # noqa: E402
from collector.ingest.decode.trace_json import decode_json_message, parse_trace_record  # noqa: E402
from collector.store import copy_text  # noqa: E402
from collector.store.repository import trace_copy_line  # noqa: E402
from tests.collector.traces import trace_bytes  # noqa: E402


def best_us(fn: Callable[[Any], object], items: Sequence[Any], passes: int = 5) -> float:
    """Best-of-`passes` µs per item of `fn` over `items`."""
    best = float("inf")
    for _ in range(passes):
        started = time.perf_counter()
        for item in items:
            fn(item)
        best = min(best, time.perf_counter() - started)
    return best / len(items) * 1e6


def msgspec_decoder() -> Callable[[bytes], object]:
    """A schema-typed decoder of the benchmark's trace shape (msgspec, C)."""
    import msgspec

    # built with explicit annotations: the module's postponed (string) annotations cannot
    # be resolved by msgspec inside a function
    context = msgspec.defstruct(
        "Context",
        [
            ("id", str | None, None),
            ("url", str | None, None),
            ("text", str | None, None),
            ("score", float | None, None),
        ],
        forbid_unknown_fields=True,
        omit_defaults=True,
    )
    judge = msgspec.defstruct(
        "Judge",
        [
            ("decision", bool | None, None),
            ("score", float | None, None),
            ("model", str | None, None),
            ("latency_ms", float | None, None),
        ],
        forbid_unknown_fields=True,
    )
    wire = msgspec.defstruct(
        "Wire",
        [
            ("trace_id", str),
            ("timestamp", str),
            ("question", str),
            ("answer", str | None, None),
            ("contexts", list[context] | None, None),  # type: ignore[valid-type]
            ("session_id", str | None, None),
            ("user_id", str | None, None),
            ("turn", int | None, None),
            ("judge", judge | None, None),
            ("cache", dict[str, Any] | None, None),
            ("model", str | None, None),
            ("usage", dict[str, int | float] | None, None),
            ("latency_ms", float | None, None),
            ("tags", dict[str, str | int | float] | None, None),
            ("metadata", dict[str, Any] | None, None),
            ("relevant_ids", list[str] | None, None),
        ],
        forbid_unknown_fields=True,
    )
    return msgspec.json.Decoder(wire).decode  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=5000, help="traces (default: 5000)")
    parser.add_argument("--msgspec", action="store_true", help="also time msgspec (installed)")
    args = parser.parse_args()

    messages = [trace_bytes(i, size_bytes=8192) for i in range(args.traces)]
    gc.freeze()
    gc.set_threshold(10_000)
    objects = [orjson.loads(m) for m in messages]
    records = [parse_trace_record(o) for o in objects]
    texts = [m.decode() for m in messages]
    now = copy_text.timestamp(datetime.now(UTC))
    size = sum(map(len, messages)) / len(messages)
    print(
        f"{args.traces} traces of {size:.0f} B; load average {os.getloadavg()[0]:.2f}; "
        f"µs per trace, best of 5",
        flush=True,
    )

    parse = best_us(orjson.loads, messages)
    structure = best_us(lambda m: check_structure(m, orjson.loads(m)), messages) - parse
    envelope = best_us(decode_json_message, messages)
    validate = best_us(parse_trace_record, objects)
    line = best_us(lambda r: trace_copy_line(r, now), records)
    rows = [
        ("orjson parse", parse),
        ("structure check (depth, duplicate keys)", structure),
        ("decode_json_message (parse + checks)", envelope),
        ("validation into TraceRecord", validate),
        ("COPY line", line),
        ("**decode + validate + COPY line**", envelope + validate + line),
        ("floor: UTF-8 decode of the message", best_us(bytes.decode, messages)),
        ("floor: UTF-8 encode back", best_us(str.encode, texts)),
    ]
    if args.msgspec:
        decode = msgspec_decoder()
        rows.append(("msgspec typed decode (parse + types, C)", best_us(decode, messages)))
    width = max(len(name) for name, _ in rows)
    for name, us in rows:
        print(f"{name:<{width}}  {us:7.1f}")


if __name__ == "__main__":
    main()
