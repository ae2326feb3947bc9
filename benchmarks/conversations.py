"""Conversation outcomes against human labels: re-ask and escalation precision and recall.

    python -m benchmarks.conversations [FILE] [--model NAME] [--sweep] [--errors dev|test]
        [--cost]

FILE (default `benchmarks/data/conversations_ru_en.jsonl`, written for this repository) has
one conversation a line: `id`, `split` ("dev" to tune on, "test" held out, "fresh" written
after every rule and weight was fixed and measured once), `kind` (a note)
and `turns`, each with `q` (the user's message), `re_ask_of` (the earlier turns it asks
again, by index) and `escalation` (it asks for a person). The questions are embedded by the
embedder `ragpulse.job_setup.make_embedder` builds from default settings, with `--model`
as the configured model (default the product's; cached under
/tmp/ragpulse-topics-embeddings), and each conversation goes through
`evaluators.conversations.session_outcome` at that model's calibrated cache threshold, as
the product runs it with that model configured.

Reported per split, precision and recall of
- re-asked answers: a turn whose answer a later turn re-asks (`TurnOutcome.re_asked`);
- re-asking turns: a turn that re-asks an earlier one (what `SessionOutcome.re_asks` counts);
- escalations (`TurnOutcome.escalation`);
beside ablations: the cosine alone (no follow-up rule), the hard bar that preceded the
fitted decision (`evaluators.conversations.decision`), each lowered bar and the question
kinds left out, and a keyword baseline for escalation (a person's name anywhere, no
stemming, no negation).
`--sweep` prints the dev split's F1 over the threshold and the follow-up constants (how
they were chosen); `--errors` lists the misses and false alarms of one split; `--cost`
times `session_outcome` on sessions of 3-50 turns drawn from the set.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from benchmarks.topics import embed
from evaluators.aggregate import wilson_interval
from evaluators.conversations import Turn, is_escalation, re_ask_threshold, session_outcome
from evaluators.conversations.decision import WEIGHTS, ReaskWeights
from evaluators.conversations.reask import (
    DEFAULT_RULE,
    ReaskRule,
    is_follow_up,
    is_re_ask,
    pair_threshold,
    same_words,
)
from evaluators.embedder import DEFAULT_MODEL

DEFAULT_FILE = Path(__file__).parent / "data" / "conversations_ru_en.jsonl"
SPLITS = ("dev", "test", "fresh")
_KEYWORDS = re.compile(r"оператор|человек|менеджер|специалист|operator|human|agent|manager")

Detector = Callable[[str, str, float, float], bool]
"""(earlier, later, cosine, threshold) -> does later re-ask earlier?"""


@dataclass(frozen=True)
class Conversation:
    id: str
    split: str
    questions: tuple[str, ...]
    re_ask_of: tuple[tuple[int, ...], ...]
    escalation: tuple[bool, ...]


@dataclass(frozen=True)
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, truth: Sequence[bool], found: Sequence[bool]) -> Counts:
        pairs = list(zip(truth, found, strict=True))
        return Counts(
            self.tp + sum(t and f for t, f in pairs),
            self.fp + sum(f and not t for t, f in pairs),
            self.fn + sum(t and not f for t, f in pairs),
        )

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def cell(self) -> str:
        """precision, recall (each with its Wilson 95% interval) and the positives."""
        p_lo, p_hi = wilson(self.tp, self.tp + self.fp)
        r_lo, r_hi = wilson(self.tp, self.tp + self.fn)
        return (
            f"{self.precision:.3f} ({p_lo:.2f}-{p_hi:.2f}) | "
            f"{self.recall:.3f} ({r_lo:.2f}-{r_hi:.2f}) | {self.tp + self.fn}"
        )


def wilson(k: int, n: int) -> tuple[float, float]:
    """The Wilson 95% score interval of k successes in n trials ((0, 1) for n = 0)."""
    return (0.0, 1.0) if n == 0 else wilson_interval(k, n)


def load(path: Path) -> list[Conversation]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            item = json.loads(line)
            turns = item["turns"]
            out.append(
                Conversation(
                    item["id"],
                    item["split"],
                    tuple(t["q"] for t in turns),
                    tuple(tuple(t["re_ask_of"]) for t in turns),
                    tuple(bool(t["escalation"]) for t in turns),
                )
            )
    return out


def by_conversation(convs: Sequence[Conversation], matrix: np.ndarray) -> dict[str, np.ndarray]:
    """The rows of `matrix` (the conversations' questions in order) per conversation id."""
    rows, at = {}, 0
    for c in convs:
        rows[c.id] = matrix[at : at + len(c.questions)]
        at += len(c.questions)
    return rows


def _truth_re_asked(c: Conversation) -> list[bool]:
    earlier = {i for refs in c.re_ask_of for i in refs}
    return [i in earlier for i in range(len(c.questions))]


def shipped(rule: ReaskRule = DEFAULT_RULE, weights: ReaskWeights = WEIGHTS) -> Detector:
    def detect(a: str, b: str, cos: float, thr: float) -> bool:
        return is_re_ask(a, b, cos, thr, rule, weights)

    return detect


def cosine_only(a: str, b: str, cos: float, thr: float) -> bool:
    return cos > thr


def cosine_follow_up(a: str, b: str, cos: float, thr: float) -> bool:
    return cos > thr and not is_follow_up(a, b)


def hard_bar(a: str, b: str, cos: float, thr: float) -> bool:
    """The rule before the fitted decision (e836c20): above the pair's bar or the same
    words again, and not a follow-up."""
    close = cos > pair_threshold(a, b, thr, DEFAULT_RULE)
    return (close or same_words(a, b)) and not is_follow_up(a, b)


def _pairs(
    c: Conversation, rows: np.ndarray, threshold: float, detect: Detector
) -> set[tuple[int, int]]:
    sims = rows @ rows.T
    skip = [is_escalation(q, {}) for q in c.questions]
    return {
        (i, j)
        for j in range(len(c.questions))
        for i in range(j)
        if not (skip[i] or skip[j])
        and detect(c.questions[i], c.questions[j], float(sims[i, j]), threshold)
    }


@dataclass(frozen=True)
class Scores:
    re_asked: Counts
    re_asking: Counts


def score_re_asks(
    convs: Sequence[Conversation],
    rows: dict[str, np.ndarray],
    threshold: float,
    detect: Detector,
) -> Scores:
    asked, asking = Counts(), Counts()
    for c in convs:
        pairs = _pairs(c, rows[c.id], threshold, detect)
        n = len(c.questions)
        asked = asked.add(_truth_re_asked(c), [any(p[0] == i for p in pairs) for i in range(n)])
        asking = asking.add(
            [bool(r) for r in c.re_ask_of], [any(p[1] == j for p in pairs) for j in range(n)]
        )
    return Scores(asked, asking)


def score_product(
    convs: Sequence[Conversation], rows: dict[str, np.ndarray], threshold: float
) -> tuple[Scores, Counts]:
    """The shipped path: `session_outcome` per conversation."""
    asked, asking, esc = Counts(), Counts(), Counts()
    for c in convs:
        turns = [
            Turn(f"{c.id}-{i}", q, "an answer", float(i), {}) for i, q in enumerate(c.questions)
        ]
        out = session_outcome(turns, rows[c.id], threshold)
        asked = asked.add(_truth_re_asked(c), [t.re_asked for t in out.turns])
        esc = esc.add(c.escalation, [t.escalation for t in out.turns])
        # re-asking turns are not per-turn fields; the pairs give them
        pairs = _pairs(c, rows[c.id], threshold, shipped())
        asking = asking.add(
            [bool(r) for r in c.re_ask_of],
            [any(p[1] == j for p in pairs) for j in range(len(c.questions))],
        )
        if sum(any(p[1] == j for p in pairs) for j in range(len(c.questions))) != out.re_asks:
            raise RuntimeError(f"{c.id}: re-ask count differs from session_outcome's")
    return Scores(asked, asking), esc


def missed_by_cosine(convs: Sequence[Conversation], rows: dict[str, np.ndarray], thr: float) -> str:
    """How the labelled re-ask pairs the shipped rule misses spread over the cosine, cut
    at τ - (1 - τ) and τ - (1 - τ) / 2 (the margin -1 and -0.5, comparable across models)."""
    low, mid = thr - (1 - thr), thr - (1 - thr) / 2
    bins = {
        f"< {low:.2f}": 0,
        f"{low:.2f}-{mid:.2f}": 0,
        f"{mid:.2f}-{thr:g}": 0,
        f"> {thr:g} (a rule said no)": 0,
    }
    for c in convs:
        sims = rows[c.id] @ rows[c.id].T
        found = _pairs(c, rows[c.id], thr, shipped())
        for j, refs in enumerate(c.re_ask_of):
            for i in refs:
                if (i, j) in found:
                    continue
                cos = float(sims[i, j])
                key = list(bins)[int(cos >= low) + int(cos >= mid) + int(cos > thr)]
                bins[key] += 1
    return ", ".join(f"{k}: {v}" for k, v in bins.items())


def refit(
    convs: Sequence[Conversation], rows: dict[str, np.ndarray], threshold: float
) -> ReaskWeights:
    """The decision's weights fitted on the dev split's pairs with these embeddings (the
    shipped ones are the default model's fit; `benchmarks.reask_fit`)."""
    from benchmarks.reask_fit import examples, fit_weights

    return fit_weights(*examples([c for c in convs if c.split == "dev"], rows, threshold))


def keyword_escalation(convs: Sequence[Conversation]) -> Counts:
    counts = Counts()
    for c in convs:
        counts = counts.add(c.escalation, [bool(_KEYWORDS.search(q.lower())) for q in c.questions])
    return counts


def report(convs: list[Conversation], rows: dict[str, np.ndarray], model: str, thr: float) -> None:
    by_split = {s: [c for c in convs if c.split == s] for s in SPLITS}
    sizes = ", ".join(
        f"{s}: {len(v)} conversations, {sum(len(c.questions) for c in v)} turns"
        for s, v in by_split.items()
    )
    print(f"model {model}, calibrated cache threshold {thr:g}; {sizes}\n")
    print("| split | detector | precision | recall | positives |")
    print("|---|---|---|---|---|")
    ablations: list[tuple[str, Detector]] = [
        ("cosine > τ only", cosine_only),
        ("cosine > τ and not a follow-up", cosine_follow_up),
        ("hard bar (the rule before the fitted decision)", hard_bar),
        ("shipped without the marker bar", shipped(ReaskRule(marker=0.0))),
        ("shipped without the cross-script bar", shipped(ReaskRule(cross_script=0.0))),
        ("shipped without the question kinds", shipped(ReaskRule(kinds=False))),
        ("decision refitted on this model's dev pairs", shipped(weights=refit(convs, rows, thr))),
    ]
    for split, group in [*by_split.items(), ("all", convs)]:
        product, esc = score_product(group, rows, thr)
        print(f"| {split} | **re-asked answers** (shipped) | {product.re_asked.cell()} |")
        print(f"| {split} | **re-asking turns** (shipped) | {product.re_asking.cell()} |")
        for name, detect in ablations:
            s = score_re_asks(group, rows, thr, detect)
            print(f"| {split} | re-asked answers, {name} | {s.re_asked.cell()} |")
        print(f"| {split} | **escalations** (shipped) | {esc.cell()} |")
        print(f"| {split} | escalations, keyword baseline | {keyword_escalation(group).cell()} |")
    for split, group in by_split.items():
        print(f"\nmissed re-ask pairs on {split} by cosine: {missed_by_cosine(group, rows, thr)}")


def sweep(convs: list[Conversation], rows: dict[str, np.ndarray], thr: float) -> None:
    """Dev F1 of re-asked answers over the rule's constants, one varied at a time."""
    dev = [c for c in convs if c.split == "dev"]
    print(f"\ndev F1 of re-asked answers, one constant varied (shipped: {DEFAULT_RULE})\n")
    print("| constant | value | precision | recall | F1 |")
    print("|---|---|---|---|---|")
    grid: dict[str, tuple[float, ...]] = {
        "template": (0.5, 0.6, 0.7, 0.8, 0.9, 2.0),
        "ellipsis": (0.0, 0.34, 0.5, 0.67),
        "marker": (0.0, 0.5, 0.7, 0.9, 1.1, 1.3),
        "cross_script": (0.0, 0.2, 0.35, 0.5, 0.7),
    }
    for name, values in grid.items():
        for value in values:
            rule = replace(DEFAULT_RULE, **{name: value})  # type: ignore[arg-type]
            sc = score_re_asks(dev, rows, thr, shipped(rule)).re_asked
            print(f"| {name} | {value:g} | {sc.precision:.3f} | {sc.recall:.3f} | {sc.f1:.3f} |")
    for t in sorted({round(thr + d, 2) for d in (-0.09, -0.06, -0.03, 0.0, 0.03)}):
        sc = score_re_asks(dev, rows, t, shipped()).re_asked
        print(
            f"| τ (model's: {thr:g}) | {t:g} | {sc.precision:.3f} | {sc.recall:.3f} | {sc.f1:.3f} |"
        )


def errors(convs: list[Conversation], rows: dict[str, np.ndarray], thr: float, split: str) -> None:
    print(f"\nerrors on {split}:")
    for c in (c for c in convs if c.split == split):
        sims = rows[c.id] @ rows[c.id].T
        found = _pairs(c, rows[c.id], thr, shipped())
        truth = {(i, j) for j, refs in enumerate(c.re_ask_of) for i in refs}
        for i, j in sorted(found ^ truth):
            kind = "false re-ask" if (i, j) in found else "missed re-ask"
            print(f"  {c.id} {kind} cos={sims[i, j]:.2f}: {c.questions[i]!r} -> {c.questions[j]!r}")
        for q, want in zip(c.questions, c.escalation, strict=True):
            if is_escalation(q, {}) != want:
                print(f"  {c.id} {'missed' if want else 'false'} escalation: {q!r}")


def cost(convs: list[Conversation], matrix: np.ndarray, thr: float) -> None:
    """Milliseconds per `session_outcome` of 200 n-turn sessions drawn from the set's
    questions with their real embeddings, one process (the per-question cache holds the
    set's questions after the report: the stemming of a new question is not in these)."""
    texts = [q for c in convs for q in c.questions]
    rng = np.random.default_rng(0)
    print("\n| turns | ms per session |\n|---|---|")
    for n in (3, 5, 10, 20, 50):
        sessions = [rng.choice(len(texts), size=n, replace=False) for _ in range(200)]
        start = time.perf_counter()
        for pick in sessions:
            turns = [Turn(str(i), texts[i], "a", float(k), {}) for k, i in enumerate(pick)]
            session_outcome(turns, matrix[pick], thr)
        print(f"| {n} | {(time.perf_counter() - start) / len(sessions) * 1000:.2f} |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--model", help=f"the configured embedding model (default {DEFAULT_MODEL})")
    parser.add_argument("--sweep", action="store_true", help="dev F1 over the constants")
    parser.add_argument("--errors", choices=SPLITS, help="list one split's errors")
    parser.add_argument("--cost", action="store_true", help="time session_outcome")
    args = parser.parse_args(argv)
    convs = load(args.file)
    matrix, model = embed([q for c in convs for q in c.questions], args.model)
    rows = by_conversation(convs, matrix)
    thr = re_ask_threshold({}, model)
    report(convs, rows, model, thr)
    if args.sweep:
        sweep(convs, rows, thr)
    if args.errors:
        errors(convs, rows, thr, args.errors)
    if args.cost:
        cost(convs, matrix, thr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
