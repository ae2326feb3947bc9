"""A new intent between re-clusterings: is it found in the recent window (`novel_topics`)?

For each of `--intents` intents of a labelled file (text, intent; JSON lines or CSV, as
`benchmarks.topics` reads), held out: 5,000 older questions of the other intents are
clustered (`discover`, as a re-clustering does), then a recent day of `--per-day` questions
holds the held-out intent at `--share` of it. `novel_topics` must find a new topic that is
mostly that intent (purity >= 0.5 of the recent questions nearest it). The control, in the
same run: a steady recent day of the other intents alone, where every new topic found is a
false one. Questions are drawn with repetition from the file's texts, embedded once with the
default embedder.

Run: `.venv/bin/python -m benchmarks.topic_novelty [FILE] [--intents 12] [--share 0.03]
[--per-day 1000]` (default file: benchmarks/data/topics_ru_en.jsonl).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.topics import embed, load
from evaluators.topics import discover, nearest_topic
from evaluators.topics.novelty import novel_topics

DEFAULT = Path(__file__).parent / "data" / "topics_ru_en.jsonl"


def _day(
    rng: np.random.Generator,
    by_intent: dict[str, list[int]],
    intents: Sequence[str],
    count: int,
    new: str | None = None,
    share: float = 0.0,
) -> tuple[np.ndarray, list[str]]:
    """`count` question indices (and their intents) drawn from `intents`, `new` at `share`."""
    rows, names = [], []
    for _ in range(count):
        name = new if new is not None and rng.random() < share else str(rng.choice(intents))
        rows.append(int(rng.choice(by_intent[name])))
        names.append(name)
    return np.asarray(rows), names


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--intents", type=int, default=12)
    parser.add_argument("--share", type=float, default=0.03)
    parser.add_argument("--per-day", type=int, default=1000)
    parser.add_argument("--older", type=int, default=5000)
    parser.add_argument("--min-size", type=int, default=10)
    args = parser.parse_args(argv)
    data = load(args.file)
    rows, model = embed(data.texts)
    by_intent: dict[str, list[int]] = defaultdict(list)
    for i, name in enumerate(data.intents):
        by_intent[name].append(i)
    names = sorted(by_intent)
    print(f"{args.file.name}, embedder {model}, new intent at {args.share:.0%} of a day of "
          f"{args.per_day} questions against {args.older} older ones\n")  # fmt: skip
    print("| held-out intent | found | purity | recall | recent / older nearest | p | "
          "candidates | steady control: new topics (false) | seconds |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    found = false = 0
    for seed, new in enumerate(names[: args.intents]):
        rng = np.random.default_rng(seed)
        steady = [n for n in names if n != new]
        older, _ = _day(rng, by_intent, steady, args.older)
        recent, recent_names = _day(rng, by_intent, steady, args.per_day, new, args.share)
        control, _ = _day(rng, by_intent, steady, args.per_day)
        started = time.perf_counter()
        topics = discover(
            rows[older], [data.texts[i] for i in older], min_size=args.min_size, max_topics=50
        )
        texts = [data.texts[i] for i in recent]
        seen = novel_topics(rows[recent], texts, rows[older], topics.centroids,
                            min_size=args.min_size)  # fmt: skip
        quiet = novel_topics(rows[control], [data.texts[i] for i in control], rows[older],
                             topics.centroids, min_size=args.min_size)  # fmt: skip
        seconds = time.perf_counter() - started
        best = (0.0, 0.0, "-", "-")
        if seen.new:
            every = np.vstack([topics.centroids, seen.centroids])
            nearest = nearest_topic(rows[recent], every).topics
            held = np.asarray([n == new for n in recent_names])
            for j in seen.new:
                members = nearest == len(topics.centroids) + j
                purity = float(np.mean(held[members])) if members.any() else 0.0
                recall = float(np.mean(members[held])) if held.any() else 0.0
                if purity > best[0]:
                    best = (purity, recall, f"{seen.recent[j]} / {seen.older[j]}",
                            f"{seen.p_values[j]:.0e}")  # fmt: skip
        hit = best[0] >= 0.5
        found += hit
        false += len(quiet.new)
        print(f"| {new} | {'yes' if hit else 'no'} | {best[0]:.2f} | {best[1]:.2f} | {best[2]} | "
              f"{best[3]} | {len(seen.centroids)} | {len(quiet.new)} | {seconds:.0f} |",
              flush=True)  # fmt: skip
    print(f"\nfound {found} of {args.intents}; false new topics on the steady days: {false}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
