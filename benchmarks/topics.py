"""Topics against human labels: NMI and ARI of `evaluators.topics.discover` beside k-means
and Ward given the true number of intents, on the same embeddings in the same run.

    OMP_NUM_THREADS=1 python -m benchmarks.topics FILE [FILE ...] [--min-size N ...]
        [--planted 5] [--scale 100000] [--output topics-results.md]

A FILE is labelled questions: CSV with columns `text,category` (Banking77's
`banking_data/test.csv`, CC-BY-4.0, read from a path: other people's sentences are not
committed) or JSONL with `text`, `intent` and optionally `lang` and `pair`
(`benchmarks/data/topics_ru_en.jsonl`, written for this repository: a Russian question and
its English twin share a `pair`). `--min-size` is the smallest topic, one value for all
files or one per file. The questions are embedded with the default embedder (the one
`ragpulse.job_setup.make_embedder` builds from default settings), cached under
/tmp/ragpulse-topics-embeddings by a hash of the model and the texts.

Reported per file: the number of topics, NMI and ARI (scikit-learn) of
- `discover` (k chosen by the method) and its space cut by Ward at the true k (an ablation);
- the oracle baselines at the true k: k-means and Ward on the embeddings, Ward on the
  embeddings joined with character TF-IDF (weight 0.7, SVD 128);
and, where the file has twins, the share of twin pairs in one topic; stability: two
re-clusterings of steady traffic (two random 80% samples of the file, another seed), all
questions assigned by nearest centroid, the share keeping their topic id, both for a fresh
clustering matched by the Hungarian algorithm and for `recluster` anchored on the previous
topics. `--planted N` holds N intents out, one at a time, and brings each back in a
re-clustering: is a new topic born for it? `--scale N` times `discover` on N questions
synthesised from the first file's embeddings by jittering (Gaussian noise, cosine ~0.95 to
the source row) and measures the nearest-centroid assignment's throughput in this process.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.cluster import AgglomerativeClustering, KMeans
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from evaluators.topics import discover, kept_share, match_topics, nearest_topic, relabel
from evaluators.topics.cluster import ward_partition
from evaluators.topics.evolve import first_topics, recluster
from evaluators.topics.represent import (
    clustering_space,
    normalise_rows,
    text_features,
)

CACHE = Path("/tmp/ragpulse-topics-embeddings")
STABILITY_SHARE = 0.8


@dataclass(frozen=True)
class Labelled:
    """A labelled file: its questions, their intents, and twin pair ids ("" for none)."""

    name: str
    texts: tuple[str, ...]
    intents: tuple[str, ...]
    pairs: tuple[str, ...]


def load(path: Path) -> Labelled:
    """Read a CSV (text, category) or JSONL (text, intent[, pair]) file of labelled questions."""
    texts: list[str] = []
    intents: list[str] = []
    pairs: list[str] = []
    with path.open(encoding="utf-8") as fh:
        if path.suffix == ".csv":
            for row in csv.DictReader(fh):
                texts.append(row["text"])
                intents.append(row["category"])
                pairs.append("")
        else:
            for line in fh:
                if line.strip():
                    item = json.loads(line)
                    texts.append(item["text"])
                    intents.append(item["intent"])
                    pairs.append(str(item.get("pair", "")))
    return Labelled(path.name, tuple(texts), tuple(intents), tuple(pairs))


def embed(texts: Sequence[str], model: str | None = None) -> tuple[np.ndarray, str]:
    """The rows for `texts` of the embedder the product builds from default settings, with
    `model` as the configured model when given; from the /tmp cache when computed before."""
    from collector.settings import Settings
    from ragpulse.job_setup import make_embedder

    settings = Settings()
    if model is not None:
        configured = settings.embeddings.model_copy(update={"model": model})
        settings = settings.model_copy(update={"embeddings": configured})
    embedder = make_embedder(settings)
    digest = hashlib.sha256("\n".join([embedder.model_name, *texts]).encode()).hexdigest()[:24]
    path = CACHE / f"{digest}.npy"
    if path.exists():
        return np.load(path), embedder.model_name
    rows = np.asarray(embedder.encode(list(texts)), dtype=np.float32)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, rows)
    return rows, embedder.model_name


def scores(truth: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(NMI, ARI) of `labels` against `truth`."""
    return (
        float(normalized_mutual_info_score(truth, labels)),
        float(adjusted_rand_score(truth, labels)),
    )


def twin_share(pairs: Sequence[str], labels: np.ndarray) -> float | None:
    """The share of twin pairs whose two questions share a topic (None: no pairs)."""
    members: dict[str, list[int]] = {}
    for pair, label in zip(pairs, labels.tolist(), strict=True):
        if pair:
            members.setdefault(pair, []).append(label)
    groups = [m for m in members.values() if len(m) >= 2]
    if not groups:
        return None
    return float(np.mean([len(set(m)) == 1 for m in groups]))


def stability(
    rows: np.ndarray, texts: Sequence[str], min_size: int, seed: int
) -> tuple[float, float]:
    """(fresh + Hungarian, anchored) shares of questions keeping their topic id between
    clusterings of two random 80% samples."""
    rng = np.random.default_rng(seed + 100)
    size = max(min_size, int(STABILITY_SHARE * len(rows)))
    first = np.sort(rng.choice(len(rows), size, replace=False))
    second = np.sort(rng.choice(len(rows), size, replace=False))
    before = first_topics(
        discover(rows[first], [texts[i] for i in first], min_size=min_size, seed=seed)
    )
    labels_before = np.asarray(before.ids)[nearest_topic(rows, before.centroids).topics]
    fresh = discover(rows[second], [texts[i] for i in second], min_size=min_size, seed=seed + 1)
    match = match_topics(before.centroids, before.ids, fresh.centroids)
    fresh_labels = relabel(nearest_topic(rows, fresh.centroids).topics, match.ids)
    after = recluster(
        before, rows[second], [texts[i] for i in second], min_size=min_size, seed=seed + 1
    )
    anchored = np.asarray(after.ids)[nearest_topic(rows, after.centroids).topics]
    return kept_share(labels_before, fresh_labels), kept_share(labels_before, anchored)


def evaluate(data: Labelled, rows: np.ndarray, min_size: int, seed: int) -> list[str]:
    """The markdown table rows for one labelled file."""
    truth = np.unique(np.asarray(data.intents), return_inverse=True)[1]
    k = int(truth.max()) + 1
    out: list[str] = []

    def row(method: str, labels: np.ndarray, seconds: float, extra: str = "") -> None:
        nmi, ari = scores(truth, labels)
        twins = twin_share(data.pairs, labels)
        twins_text = f"{twins:.1%}" if twins is not None else "-"
        out.append(
            f"| {data.name} | {method} | {len(set(labels.tolist()))} | {nmi:.3f} | {ari:.3f} "
            f"| {twins_text} | {seconds:.1f} | {extra} |"
        )

    start = time.perf_counter()
    found = discover(rows, data.texts, min_size=min_size, seed=seed)
    row(
        f"**discover** (k by the method, min_size {min_size})",
        found.labels,
        time.perf_counter() - start,
        f"k chosen {found.k_chosen}, {found.k_chosen - found.count} under min_size dissolved",
    )
    start = time.perf_counter()
    space = clustering_space(rows, data.texts, found.options, seed)
    row("discover's space, Ward at true k", ward_partition(space, k), time.perf_counter() - start)
    start = time.perf_counter()
    labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(rows)
    row("k-means, true k (oracle)", labels, time.perf_counter() - start)
    start = time.perf_counter()
    labels = AgglomerativeClustering(n_clusters=k).fit_predict(rows)
    row("Ward, true k (oracle)", labels, time.perf_counter() - start)
    start = time.perf_counter()
    features = text_features(data.texts, 128, seed)
    joined = rows if features is None else np.hstack([normalise_rows(rows), 0.7 * features])
    labels = AgglomerativeClustering(n_clusters=k).fit_predict(joined)
    row("Ward + char TF-IDF, true k (oracle)", labels, time.perf_counter() - start)
    start = time.perf_counter()
    fresh, anchored = stability(rows, data.texts, min_size, seed)
    out.append(
        f"| {data.name} | stability, two 80% samples: kept topic id | - | - | - | - "
        f"| {time.perf_counter() - start:.1f} | fresh + Hungarian {fresh:.1%}, "
        f"anchored `recluster` {anchored:.1%} |"
    )
    return out


def planted(data: Labelled, rows: np.ndarray, count: int, min_size: int, seed: int) -> str:
    """A new intent appearing: for `count` intents drawn at random, topics found without it,
    then `recluster` on all questions; the table row says for how many a new topic was born
    holding mostly that intent, and the mean share of its questions that topic took."""
    intents = np.asarray(data.intents)
    names = sorted(set(data.intents))
    drawn = np.random.default_rng(seed).choice(len(names), min(count, len(names)), replace=False)
    born = 0
    recall: list[float] = []
    for name in (names[i] for i in drawn):
        without = np.flatnonzero(intents != name)
        before = first_topics(
            discover(rows[without], [data.texts[i] for i in without], min_size=min_size)
        )
        after = recluster(before, rows, data.texts, min_size=min_size, seed=seed + 1)
        held = intents == name
        best = 0.0
        for topic in after.new:
            members = after.labels == topic
            if np.mean(intents[members] == name) >= 0.5:
                best = max(best, float(np.mean(after.labels[held] == topic)))
        born += best > 0
        recall.append(best)
    return (
        f"| {data.name} | planted new intent ({len(drawn)} drawn, each held out then back) "
        f"| - | - | - | - | - | a new topic, mostly that intent, for {born} of {len(drawn)}; "
        f"it holds {np.mean(recall):.0%} of the intent's questions on average |"
    )


def scale(rows: np.ndarray, texts: Sequence[str], count: int, seed: int) -> list[str]:
    """Clustering time for `count` jittered questions and the assignment throughput."""
    rng = np.random.default_rng(seed)
    source = rng.integers(0, len(rows), count)
    noise = rng.normal(0.0, 0.33 / np.sqrt(rows.shape[1]), (count, rows.shape[1]))
    synthetic = normalise_rows(rows[source] + noise.astype(np.float32))
    cosine = float(np.mean(np.sum(synthetic * normalise_rows(rows[source]), axis=1)))
    synthetic_texts = [texts[i] for i in source]
    start = time.perf_counter()
    found = discover(synthetic, synthetic_texts, min_size=10, seed=seed)
    took = time.perf_counter() - start
    start = time.perf_counter()
    rounds = 0
    while rounds < 3 or time.perf_counter() - start < 2.0:
        nearest_topic(synthetic, found.centroids)
        rounds += 1
    rate = rounds * count / (time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    load = os.getloadavg()[0]
    return [
        f"| {count:,} jittered questions (cosine {cosine:.2f} to the source) | "
        f"discover: {took:.1f} s ({found.sampled:,} sampled, {found.count} topics) | "
        f"assignment: {rate:,.0f} questions/s to {found.count} centroids | "
        f"peak RSS {peak:,.0f} MB (with the embedder, when it ran) | {load:.1f} |"
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("files", nargs="+", type=Path, help="labelled CSV or JSONL files")
    parser.add_argument("--min-size", type=int, nargs="+", default=[10])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scale", type=int, default=0, help="questions to time (0: skip)")
    parser.add_argument(
        "--planted", type=int, default=0, help="intents to hold out and bring back (0: skip)"
    )
    parser.add_argument("--output", type=Path, help="also write the tables to this file")
    args = parser.parse_args(argv)
    sizes = list(args.min_size)
    if len(sizes) not in (1, len(args.files)):
        parser.error("--min-size takes one value or one per file")
    sizes = sizes * len(args.files) if len(sizes) == 1 else sizes
    lines = [
        "| file | method | topics | NMI | ARI | twins in one topic | seconds | notes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    first: tuple[np.ndarray, tuple[str, ...]] | None = None
    model = ""
    for path, min_size in zip(args.files, sizes, strict=True):
        data = load(path)
        rows, model = embed(data.texts)
        first = first or (rows, data.texts)
        lines += evaluate(data, rows, min_size, args.seed)
        if args.planted:
            lines.append(planted(data, rows, args.planted, min_size, args.seed))
        print("\n".join(lines[-6:]), file=sys.stderr, flush=True)
    lines.insert(0, f"Embedder: {model}; seed {args.seed}.\n")
    if args.scale and first is not None:
        lines += [
            "",
            "| scale | clustering | assignment | memory | load average (2 cores) |",
            "|---|---|---|---|---|",
        ]
        lines += scale(first[0], first[1], args.scale, args.seed)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
