"""Speed of ragpulse's metrics against the reference implementations, measured in one run.

Sections (one function each, `SECTIONS` maps a name to it):
- retrieval: hit_rate@k, mrr@k, precision@k, recall@k, ndcg@k (k = 1, 3, 5, 10) and mrr
  for 20,000 queries x 100 retrieved documents, from `Sample`s to per-sample outcomes
  through the registry, vs pytrec_eval (trec_eval's C code) computing success_k,
  recip_rank, P_k, recall_k, ndcg_cut_k from its dicts. Target: ratio <= 0.5.
- text: rouge1_f, rouge2_f, rougeL_f and bleu over 10,000 English pairs vs rouge-score
  (one RougeScorer for the three types) plus sacrebleu.sentence_bleu. Target: <= 1.0.

Each side is timed `--repeat` times, interleaved, and the best time is kept (the machine
is shared; the minimum is the least disturbed run). A section also checks that both sides
agree, so a fast wrong answer cannot pass. Run: `python benchmarks/metrics.py` (all
sections) or `python benchmarks/metrics.py --sections text`.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from evaluators.outcome import Score
from evaluators.registry import EvalContext, resolve
from evaluators.sample import Context, Sample


@dataclass(frozen=True)
class Row:
    """One benchmark line: our time vs the reference's on the same data."""

    section: str
    workload: str
    ours_s: float
    reference: str
    reference_s: float
    target_ratio: float
    max_abs_diff: float

    @property
    def ratio(self) -> float:
        return self.ours_s / self.reference_s

    @property
    def met(self) -> bool:
        return self.ratio <= self.target_ratio


def best_times(repeat: int, **runs: Callable[[], object]) -> dict[str, float]:
    """Best wall time of each callable over `repeat` interleaved rounds."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeat):
        for name, fn in runs.items():
            gc.collect()
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


# ---------------------------------------------------------------------------- retrieval

CUTOFFS = (1, 3, 5, 10)
RETRIEVAL_METRICS = [
    f"{f}@{k}" for f in ("hit_rate", "mrr", "precision", "recall", "ndcg") for k in CUTOFFS
] + ["mrr"]
PYTREC_NAMES = {"hit_rate": "success", "precision": "P", "recall": "recall", "ndcg": "ndcg_cut"}


def retrieval_data(
    queries: int, docs: int, seed: int
) -> tuple[list[Sample], dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Random ranked lists with graded judgments: 5 judged among the retrieved, 3 not."""
    rng = random.Random(seed)
    samples: list[Sample] = []
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(queries):
        qid = f"q{q}"
        ranked = [f"doc{n}" for n in rng.sample(range(1_000_000), docs)]
        judged = {d: rng.choice([0, 1, 2, 3]) for d in rng.sample(ranked, min(5, docs))}
        judged.update({f"doc{rng.randrange(1_000_000, 2_000_000)}": 1 for _ in range(3)})
        samples.append(
            Sample(
                trace_id=qid,
                question="",
                contexts=tuple(Context(id=d) for d in ranked),
                relevance=judged,
            )
        )
        qrels[qid] = judged
        run[qid] = {d: float(docs - i) for i, d in enumerate(ranked)}
    return samples, qrels, run


def bench_retrieval(args: argparse.Namespace) -> list[Row]:
    import pytrec_eval

    from evaluators.retrieval import judgments

    samples, qrels, run = retrieval_data(args.queries, args.docs, args.seed)
    ctx = EvalContext()
    resolved = [resolve(name) for name in RETRIEVAL_METRICS]
    cuts = ",".join(map(str, CUTOFFS))
    measures = {f"{PYTREC_NAMES[f]}.{cuts}" for f in PYTREC_NAMES} | {"recip_rank"}
    results: dict[str, object] = {}

    def ours() -> None:
        judgments.clear_cache()  # a fresh batch: the matrix is built inside the timing
        results["ours"] = {r.name: r.spec.compute(samples, ctx, r.k) for r in resolved}
        judgments.clear_cache()

    def theirs() -> None:
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
        results["theirs"] = evaluator.evaluate(run)

    times = best_times(args.repeat, ours=ours, theirs=theirs)
    diff = _retrieval_diff(samples, results["ours"], results["theirs"])  # type: ignore[arg-type]
    workload = f"{args.queries:,} queries x {args.docs} docs, {len(resolved)} metrics"
    return [Row("retrieval", workload, times["ours"], "pytrec_eval", times["theirs"], 0.5, diff)]


def _retrieval_diff(
    samples: list[Sample], ours: dict[str, list[object]], theirs: dict[str, dict[str, float]]
) -> float:
    worst = 0.0
    for name, outcomes in ours.items():
        family, _, k = name.partition("@")
        if family == "mrr":
            if k:
                continue  # trec_eval has no recip_rank cutoff
            measure = "recip_rank"
        else:
            measure = f"{PYTREC_NAMES[family]}_{k}"
        for sample, outcome in zip(samples, outcomes, strict=True):
            if isinstance(outcome, Score):
                worst = max(worst, abs(outcome.value - theirs[sample.trace_id][measure]))
    return worst


# --------------------------------------------------------------------------------- text

VOCAB = [
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "is",
    "was",
    "for",
    "on",
    "with",
    "as",
    "by",
    "at",
    "from",
    "it",
    "that",
    "this",
    "be",
    "are",
    "were",
    "an",
    "or",
    "model",
    "answer",
    "question",
    "context",
    "retrieval",
    "document",
    "policy",
    "refund",
    "customer",
    "account",
    "order",
    "days",
    "30",
    "2024",
    "price",
    "service",
    "support",
    "team",
    "data",
    "user",
    "system",
    "query",
    "result",
    "score",
    "Paris",
    "France",
    "capital",
    "city",
    "river",
    "north",
    "south",
    "large",
    "small",
    "new",
    "old",
    "first",
    "last",
    "U.S.",
    "e-mail",
    "co-op",
    "don't",
    "it's",
    "3.14",
    "1,000",
]


def text_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """(reference, answer) English-like pairs: 5-40 words, punctuation, edited answers."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        ref_words = [rng.choice(VOCAB) for _ in range(rng.randint(5, 40))]
        reference = " ".join(ref_words).capitalize() + rng.choice([".", "!", "?", ""])
        answer_words = [w for w in ref_words if rng.random() < 0.8]
        for _ in range(rng.randint(0, 6)):
            answer_words.insert(rng.randint(0, len(answer_words)), rng.choice(VOCAB))
        answer = ", ".join([" ".join(answer_words[:3]), " ".join(answer_words[3:])]) + "."
        pairs.append((reference, answer))
    return pairs


def bench_text(args: argparse.Namespace) -> list[Row]:
    import sacrebleu
    from rouge_score import rouge_scorer

    from evaluators.text.rouge import rouge
    from evaluators.text.tokenizer_13a import tokenize_13a
    from evaluators.text.words import words

    pairs = text_pairs(args.pairs, args.seed)
    samples = [
        Sample(trace_id=str(i), question="", reference=ref, answer=ans)
        for i, (ref, ans) in enumerate(pairs)
    ]
    ctx = EvalContext()
    resolved = [resolve(n) for n in ("rouge1_f", "rouge2_f", "rougeL_f", "bleu")]
    results: dict[str, list[list[float]]] = {}

    def ours() -> None:
        for cached in (words, rouge, tokenize_13a):
            cached.cache_clear()  # no help from an earlier round
        results["ours"] = [
            [o.value for o in r.spec.compute(samples, ctx, r.k) if isinstance(o, Score)]
            for r in resolved
        ]

    def theirs() -> None:
        scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
        r1, r2, rl, bleu = [], [], [], []
        for reference, answer in pairs:
            scores = scorer.score(reference, answer)
            r1.append(scores["rouge1"].fmeasure)
            r2.append(scores["rouge2"].fmeasure)
            rl.append(scores["rougeL"].fmeasure)
            bleu.append(sacrebleu.sentence_bleu(answer, [reference], lowercase=True).score)
        results["theirs"] = [r1, r2, rl, bleu]

    times = best_times(args.repeat, ours=ours, theirs=theirs)
    diff = max(
        abs(a - b)
        for o, t in zip(results["ours"], results["theirs"], strict=True)
        for a, b in zip(o, t, strict=True)
    )
    workload = f"{args.pairs:,} pairs, ROUGE-1/2/L + BLEU"
    return [
        Row("text", workload, times["ours"], "rouge-score + sacrebleu", times["theirs"], 1.0, diff)
    ]


# --------------------------------------------------------------------------------- main


def bench_ux(args: argparse.Namespace) -> list[Row]:
    """UX metrics vs one batched encode of the same questions; memory bound at 100k."""
    from benchmarks import metrics_ux

    fast = metrics_ux.speed(args.ux_questions, repeats=args.ux_repeat)
    mem = metrics_ux.memory(args.ux_memory_questions)
    print(
        f"ux memory: peak RSS growth {mem['peak_rss_growth_mb']:.0f} MB for "
        f"{mem['n']:,} questions (target < 500 MB) "
        f"{'ok' if mem['peak_rss_growth_mb'] < 500 else 'MISSED'}"
    )
    if mem["peak_rss_growth_mb"] >= 500:
        args.failed_extra = True
    return [
        Row(
            section="ux",
            workload=f"3 UX metrics, {fast['n']:,} questions",
            ours_s=fast["ux_s"],
            reference="one batched encode",
            reference_s=fast["encode_s"],
            target_ratio=1.2,
            max_abs_diff=0.0,
        )
    ]


# Section name -> function.
SECTIONS: dict[str, Callable[[argparse.Namespace], list[Row]]] = {
    "retrieval": bench_retrieval,
    "text": bench_text,
    "ux": bench_ux,
}


def print_table(rows: list[Row]) -> None:
    header = (
        f"{'section':<10} {'workload':<44} {'ours s':>8} {'reference':<24} {'ref s':>8} "
        f"{'ratio':>6} {'target':>7} {'max |diff|':>10}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        mark = "ok" if r.met else "MISSED"
        print(
            f"{r.section:<10} {r.workload:<44} {r.ours_s:>8.3f} {r.reference:<24} "
            f"{r.reference_s:>8.3f} {r.ratio:>6.2f} {'<=' + str(r.target_ratio):>7} "
            f"{r.max_abs_diff:>10.1e} {mark}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--sections",
        nargs="+",
        choices=sorted(SECTIONS),
        default=sorted(SECTIONS),
        help="which sections to run (default: all)",
    )
    parser.add_argument("--queries", type=int, default=20_000, help="retrieval: queries")
    parser.add_argument("--docs", type=int, default=100, help="retrieval: documents per query")
    parser.add_argument("--pairs", type=int, default=10_000, help="text: answer/reference pairs")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds per side (best kept)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated data")
    parser.add_argument("--ux-questions", type=int, default=10_000, help="ux: questions timed")
    parser.add_argument("--ux-repeat", type=int, default=1, help="ux: timed rounds")
    parser.add_argument(
        "--ux-memory-questions", type=int, default=100_000, help="ux: questions for the RSS bound"
    )
    args = parser.parse_args(argv)
    args.failed_extra = False
    rows: list[Row] = []
    for name in args.sections:
        rows.extend(SECTIONS[name](args))
    print_table(rows)
    return 0 if all(r.met for r in rows) and not args.failed_extra else 1


if __name__ == "__main__":
    sys.exit(main())
