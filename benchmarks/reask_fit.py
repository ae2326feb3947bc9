"""Fit the re-ask decision's logistic weights on the dev split of the labelled conversations.

    python -m benchmarks.reask_fit [FILE] [--model NAME] [--cv [--second-model NAME]]

Every pair (earlier, later) of a dev conversation's questions that is neither a follow-up
(`reask.is_follow_up`, never a re-ask) nor the same words again (`reask.same_words`,
always one) is one example, escalation requests left out as `session_outcome` does: its
`reask.pair_signals` at the embedder's calibrated τ (`--model`: the configured model,
default the product's), labelled by `re_ask_of`. An L2-regularised logistic regression
(scikit-learn, C = 1, lbfgs) is fitted on them and its weights printed as the `WEIGHTS`
constant of `evaluators/conversations/decision.py` (fitted with the default model). The
held-out split is never read. `--cv` prints the dev split's 8-fold cross-validated
precision and recall of pairs at the fixed decision 0.5 (5 shuffles pooled), the estimate
the model was chosen by; with `--second-model`, also those of a decision that reads the
second model's margin (at its τ) beside the first's, an experiment: the product has only
the configured model's vectors.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.conversations import DEFAULT_FILE, Conversation, by_conversation, load
from benchmarks.topics import embed
from evaluators.conversations import is_escalation, re_ask_threshold
from evaluators.conversations.decision import DECISION, FEATURES, ReaskWeights
from evaluators.conversations.reask import is_follow_up, pair_signals, same_words
from evaluators.embedder import DEFAULT_MODEL

C = 1.0


def examples(
    convs: Sequence[Conversation], rows: dict[str, np.ndarray], threshold: float
) -> tuple[np.ndarray, np.ndarray]:
    """The signal vectors and labels of the pairs of the conversations' questions that are
    neither follow-ups nor the same words again."""
    xs: list[tuple[float, ...]] = []
    ys: list[bool] = []
    for c in convs:
        sims = rows[c.id] @ rows[c.id].T
        skip = [is_escalation(q, {}) for q in c.questions]
        for j in range(len(c.questions)):
            for i in range(j):
                a, b = c.questions[i], c.questions[j]
                if skip[i] or skip[j] or is_follow_up(a, b) or same_words(a, b):
                    continue
                signals = pair_signals(a, b, float(sims[i, j]), threshold)
                xs.append(signals.vector())
                ys.append(i in c.re_ask_of[j])
    return np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=bool)


def cross_validated(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Pair precision and recall of 8-fold cross-validation, 5 shuffles pooled."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    tp = fp = fn = 0
    for seed in range(5):
        folds = StratifiedKFold(8, shuffle=True, random_state=seed)
        model = LogisticRegression(C=C, max_iter=5000)
        p = cross_val_predict(model, x, y, cv=folds, method="predict_proba")[:, 1] > DECISION
        tp += int((p & y).sum())
        fp += int((p & ~y).sum())
        fn += int((~p & y).sum())
    return tp / max(1, tp + fp), tp / max(1, tp + fn)


def fit_weights(x: np.ndarray, y: np.ndarray) -> ReaskWeights:
    """The decision's weights fitted on the signal vectors `x` (`FEATURES`) and labels `y`."""
    from sklearn.linear_model import LogisticRegression

    fitted = LogisticRegression(C=C, max_iter=5000).fit(x, y)
    coefs = dict(zip(FEATURES, (float(w) for w in fitted.coef_[0]), strict=True))
    return ReaskWeights(intercept=float(fitted.intercept_[0]), **coefs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--model", help=f"the configured embedding model (default {DEFAULT_MODEL})")
    parser.add_argument("--cv", action="store_true", help="cross-validated dev figures")
    parser.add_argument("--second-model", help="with --cv: also with this model's margin")
    args = parser.parse_args(argv)
    if args.second_model and not args.cv:
        parser.error("--second-model needs --cv")
    convs = load(args.file)
    matrix, model_name = embed([q for c in convs for q in c.questions], args.model)
    rows = by_conversation(convs, matrix)
    dev = [c for c in convs if c.split == "dev"]
    x, y = examples(dev, rows, re_ask_threshold({}, model_name))
    fitted = fit_weights(x, y)
    print(f"# {model_name}, {len(y)} dev pairs, {int(y.sum())} re-asks")
    print("WEIGHTS = ReaskWeights(")
    for name in ("intercept", *FEATURES):
        print(f"    {name}={getattr(fitted, name):.4f},")
    print(")")
    if args.cv:
        precision, recall = cross_validated(x, y)
        print(f"dev pairs, 8-fold cross-validated at {DECISION}: P {precision:.3f} R {recall:.3f}")
    if args.second_model:
        other, other_name = embed([q for c in convs for q in c.questions], args.second_model)
        # the pairs are the same: which are follow-ups or the same words is read from words
        x2, _ = examples(dev, by_conversation(convs, other), re_ask_threshold({}, other_name))
        both = np.column_stack([x, x2[:, :1]])
        precision, recall = cross_validated(both, y)
        print(
            f"dev pairs with {other_name}'s margin too, 8-fold cross-validated: "
            f"P {precision:.3f} R {recall:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
