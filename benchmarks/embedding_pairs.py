"""Build the labelled pair set `tests/data/embedding_pairs.tsv` from the hand-written groups.

    python -m benchmarks.embedding_pairs

`tests/data/embedding_groups.json` holds 20 helpdesk topics (bank, shop, HR) of three
questions each; every question is written four times: Russian, a Russian paraphrase,
English, an English paraphrase. The pairs, all labelled (1 = same question, 0 = not):

- paraphrases (per question): ru-ru, en-en and both cross-lingual directions (ru-en);
- hard negatives: two different questions of the same topic ("block the card" vs
  "unblock the card"), in the same four language combinations;
- unrelated: a question against one from a topic eight places on (mostly another tenant).

Every fourth topic is held out (split "heldout"): thresholds are calibrated on "calib"
only, and the tests' AUC floor reads "heldout" only. Unrelated pairs never cross splits.
"""

from __future__ import annotations

import csv
import json
from itertools import combinations
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
GROUPS = DATA / "embedding_groups.json"
PAIRS = DATA / "embedding_pairs.tsv"
COLUMNS = ("id", "split", "lang", "kind", "label", "text_a", "text_b")


def build_pairs(topics: list[dict[str, object]]) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []

    def add(split: str, lang: str, kind: str, a: str, b: str) -> None:
        label = "1" if kind == "paraphrase" else "0"
        rows.append(
            {"id": str(len(rows)), "split": split, "lang": lang, "kind": kind, "label": label}
            | {"text_a": a, "text_b": b}
        )

    def four(split: str, kind: str, x: list[str], y: list[str]) -> None:
        add(split, "ru", kind, x[0], y[1])
        add(split, "en", kind, x[2], y[3])
        add(split, "ru-en", kind, x[0], y[3])
        add(split, "ru-en", kind, y[2], x[1])

    for t, topic in enumerate(topics):
        split = "heldout" if t % 4 == 3 else "calib"
        groups: list[list[str]] = topic["groups"]  # type: ignore[assignment]
        for group in groups:
            four(split, "paraphrase", group, group)
        for x, y in combinations(groups, 2):
            four(split, "hard_negative", x, y)
        other: list[list[str]] = topics[(t + 8) % len(topics)]["groups"]  # type: ignore[assignment]
        for x, y in zip(groups, other, strict=True):
            add(split, "ru", "unrelated", x[1], y[0])
            add(split, "en", "unrelated", x[3], y[2])
            add(split, "ru-en", "unrelated", x[0], y[2])
    return rows


def load_pairs(path: Path = PAIRS) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def main() -> None:
    topics = json.loads(GROUPS.read_text(encoding="utf-8"))["topics"]
    rows = build_pairs(topics)
    with PAIRS.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, COLUMNS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} pairs -> {PAIRS}")


if __name__ == "__main__":
    main()
