"""ROUGE and BLEU equal their reference packages (rouge-score, sacrebleu) to 1e-9.

English-like pairs are generated with a seeded RNG (punctuation, case, digits, empty
strings, repeated words, long sentences, underscores, entities, newlines); ROUGE is
compared on ASCII text (where our tokens must be rouge-score's), BLEU on any text,
Russian included. Russian ROUGE is pinned to values computed by hand below, and shown to
differ from rouge-score, which drops every non-ASCII letter.
"""

from __future__ import annotations

import math
import random

import pytest
import sacrebleu
from rouge_score import rouge_scorer
from rouge_score import tokenize as rouge_tokenize

from evaluators.outcome import Score, Skipped
from evaluators.registry import EvalContext, known_names, resolve
from evaluators.sample import Sample
from evaluators.text.bleu import sentence_bleu
from evaluators.text.rouge import lcs_length, rouge
from evaluators.text.words import words

TOL = 1e-9
SCORER = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)

WORDS_EN = [
    "the",
    "a",
    "an",
    "cat",
    "dog",
    "sat",
    "on",
    "mat",
    "Mat",
    "THE",
    "Paris",
    "capital",
    "of",
    "France",
    "is",
    "was",
    "retrieval",
    "augmented",
    "generation",
    "model",
    "answer",
    "question",
    "context",
    "policy",
    "refund",
    "days",
    "30",
    "2024",
    "x_y",
    "snake_case",
    "CamelCase",
    "don't",
    "it's",
    "e-mail",
    "co-op",
    "U.S.",
    "v2.0",
    "3.14",
    "1,000",
    "42",
]
WORDS_RU = [
    "кошка",
    "Кошка",
    "сидит",
    "на",
    "ковре",
    "Москва",
    "столица",
    "России",
    "ответ",
    "вопрос",
    "ёжик",
    "ЁЖИК",
]
PUNCT = [*list(".,;:!?-'\"()[]{}&/@#$%^*_+=<>|~`"), "...", " - ", "--", "&amp;", "&quot;"]
SPACES = [" ", " ", " ", "  ", "\t", "\n", "-\n", " <skipped> "]
EXOTIC = ["«", "»", "—", "№", "€", "½", "²", "😀", "café", "naïve", "İstanbul", "ß", "\u00a0"]


def _text(rng: random.Random, vocab: list[str], extra: list[str]) -> str:
    shape = rng.random()
    if shape < 0.05:
        return ""
    if shape < 0.08:
        return rng.choice(["   ", ".", "!!", "\n", "-"])
    length = rng.randint(1, 80 if shape > 0.9 else 20)
    parts: list[str] = []
    for _ in range(length):
        roll = rng.random()
        if roll < 0.12:
            parts.append(rng.choice(PUNCT))
        elif roll < 0.18 and extra:
            parts.append(rng.choice(extra))  # non-ASCII symbols, letters, no-break space
        elif roll < 0.25 and parts:
            parts.append(parts[-1])  # repeated words
        else:
            word = rng.choice(vocab)
            parts.append(word.upper() if rng.random() < 0.1 else word)
        parts.append(rng.choice(SPACES) if rng.random() < 0.8 else "")
    return "".join(parts)


def _pairs(seed: int, n: int, vocab: list[str], extra: list[str]) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        reference = _text(rng, vocab, extra)
        # Half of the answers are edits of the reference, so n-grams really overlap.
        if rng.random() < 0.5 and reference:
            tokens = reference.split(" ")
            rng.shuffle(tokens) if rng.random() < 0.2 else None
            keep = [t for t in tokens if rng.random() < 0.8]
            answer = " ".join(keep + ([rng.choice(vocab)] if rng.random() < 0.5 else []))
        else:
            answer = _text(rng, vocab, extra)
        pairs.append((reference, answer))
    return pairs


ASCII_PAIRS = _pairs(7, 400, WORDS_EN, [])
ANY_PAIRS = _pairs(11, 400, WORDS_EN + WORDS_RU, EXOTIC)


def test_generated_pairs_cover_the_edge_cases() -> None:
    texts = [t for pair in ASCII_PAIRS + ANY_PAIRS for t in pair]
    assert all((reference + answer).isascii() for reference, answer in ASCII_PAIRS)
    assert "" in texts
    assert any("_" in t for t in texts) and any(c.isdigit() for t in texts for c in t)
    assert any(len(t.split()) > 60 for t in texts)
    assert any(any("а" <= c <= "я" for c in t) for t in texts)


@pytest.mark.parametrize("pair", ASCII_PAIRS, ids=lambda p: f"{len(p[0])}:{len(p[1])}")
def test_rouge_equals_rouge_score_on_ascii(pair: tuple[str, str]) -> None:
    reference, answer = pair
    assert list(words(reference)) == rouge_tokenize.tokenize(reference, None)
    expected = SCORER.score(reference, answer)
    ours = rouge(reference, answer)
    assert ours.rouge1 == pytest.approx(expected["rouge1"].fmeasure, abs=TOL)
    assert ours.rouge2 == pytest.approx(expected["rouge2"].fmeasure, abs=TOL)
    assert ours.rougeL == pytest.approx(expected["rougeL"].fmeasure, abs=TOL)


@pytest.mark.parametrize("pair", ASCII_PAIRS + ANY_PAIRS, ids=lambda p: f"{len(p[0])}:{len(p[1])}")
def test_bleu_equals_sacrebleu_sentence_bleu(pair: tuple[str, str]) -> None:
    reference, answer = pair
    expected = sacrebleu.sentence_bleu(answer, [reference], lowercase=True).score
    assert sentence_bleu(answer, reference) == pytest.approx(expected, abs=TOL)


def test_lcs_bit_parallel_equals_dynamic_programming() -> None:
    rng = random.Random(3)
    for _ in range(300):
        a = [rng.choice("abcde") for _ in range(rng.randint(0, 70))]
        b = [rng.choice("abcdef") for _ in range(rng.randint(0, 70))]
        table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                table[i][j] = (
                    table[i - 1][j - 1] + 1
                    if a[i - 1] == b[j - 1]
                    else max(table[i - 1][j], table[i][j - 1])
                )
        assert lcs_length(a, b) == table[-1][-1]


# Russian pairs, computed by hand. T = reference tokens, A = answer tokens.
RUSSIAN = [
    # T = [кошка, сидит, на, ковре], A = [кошка, сидела, на, ковре]
    # ROUGE-1: overlap {кошка, на, ковре} = 3; P = 3/4, R = 3/4 -> F = 0.75
    # ROUGE-2: T bigrams (кошка сидит)(сидит на)(на ковре), A (кошка сидела)(сидела на)
    #          (на ковре): overlap 1; P = R = 1/3 -> F = 1/3
    # ROUGE-L: LCS = кошка на ковре = 3; P = R = 3/4 -> F = 0.75
    ("Кошка сидит на ковре", "кошка сидела на ковре", (0.75, 1 / 3, 0.75)),
    # Case folds (Ё -> ё), "!" separates: T = A = [ёжик, в, тумане] -> all 1
    ("Ёжик в тумане", "ЁЖИК В ТУМАНЕ!", (1.0, 1.0, 1.0)),
    # T = [метрика, ndcg, 10, равна, 0, 5] ("@" and "." separate), A = [метрика, ndcg,
    # равна, 0, 5]. ROUGE-1: overlap 5; P = 5/5, R = 5/6 -> F = 2(5/6)/(11/6) = 10/11.
    # ROUGE-2: T has 5 bigrams, A 4; common: (метрика ndcg)(равна 0)(0 5) = 3;
    #          P = 3/4, R = 3/5 -> F = 2(0.45)/1.35 = 2/3.
    # ROUGE-L: LCS = метрика ndcg равна 0 5 = 5; P = 1, R = 5/6 -> F = 10/11.
    ("Метрика NDCG@10 равна 0.5", "метрика ndcg равна 0,5", (10 / 11, 2 / 3, 10 / 11)),
    # "й" typed as и + combining breve (U+0306) is NFC-composed: T = A = [новый, чайник]
    ("Новый чайник", "новыи\u0306 чаи\u0306ник", (1.0, 1.0, 1.0)),
    # One word: no bigrams on either side, so ROUGE-2 = 0 / max(0, 1) = 0 (as rouge-score)
    ("Москва", "москва", (1.0, 0.0, 1.0)),
]


@pytest.mark.parametrize(("reference", "answer", "expected"), RUSSIAN)
def test_rouge_on_russian_matches_hand_computation(
    reference: str, answer: str, expected: tuple[float, float, float]
) -> None:
    assert tuple(rouge(reference, answer)) == pytest.approx(expected, abs=TOL)


def test_rouge_score_package_drops_cyrillic_which_we_do_not_inherit() -> None:
    # Pure Russian: rouge-score sees no tokens at all and scores 0.
    pure = SCORER.score("Кошка сидит на ковре", "кошка сидела на ковре")
    assert [s.fmeasure for s in pure.values()] == [0, 0, 0]
    assert rouge_tokenize.tokenize("Кошка сидит на ковре", None) == []
    # Mixed: it keeps only the ASCII fragments [ndcg, 10, 0, 5] vs [ndcg, 0, 5], so
    # ROUGE-1 = 2(1)(3/4)/(7/4) = 6/7, not the 10/11 of the real words.
    mixed = SCORER.score("Метрика NDCG@10 равна 0.5", "метрика ndcg равна 0,5")
    assert mixed["rouge1"].fmeasure == pytest.approx(6 / 7, abs=TOL)
    assert rouge("Метрика NDCG@10 равна 0.5", "метрика ndcg равна 0,5").rouge1 != pytest.approx(
        6 / 7
    )


def test_bleu_on_russian_matches_hand_computation() -> None:
    # Hyp "Кошка сидит на ковре." -> lower, 13a splits the final "." (after a non-digit):
    # [кошка, сидит, на, ковре, .] (c = 5); ref [кошка, сидит, на, ковре] (r = 4): BP = 1.
    # matches/totals: 1-grams 4/5, 2-grams 3/4, 3-grams 2/3, 4-grams 1/2
    # BLEU = (80 * 75 * 66.67 * 50) ** (1/4) = (2e7) ** 0.25 = 66.874...
    value = sentence_bleu("Кошка сидит на ковре.", "кошка сидит на ковре")
    assert value == pytest.approx((80 * 75 * (200 / 3) * 50) ** 0.25, abs=TOL)
    # Hyp [мама, мыла, окно] vs ref [мама, мыла, раму]: 1-grams 2/3, 2-grams 1/2, 3-grams
    # 0/1 -> exp smoothing gives 100 / (2 * 1) = 50; no 4-grams, so the effective order
    # is 3: BLEU = (66.67 * 50 * 50) ** (1/3) = 55.03...
    value = sentence_bleu("Мама мыла окно", "мама мыла раму")
    assert value == pytest.approx(((200 / 3) * 50 * 50) ** (1 / 3), abs=TOL)
    # Short answer: [москва] vs [москва, столица, россии]: p1 = 100, order 1,
    # BP = exp(1 - 3/1) -> BLEU = 100 * e^-2.
    assert sentence_bleu("Москва", "Москва — столица России") == pytest.approx(
        sacrebleu.sentence_bleu("Москва", ["Москва — столица России"], lowercase=True).score,
        abs=TOL,
    )
    assert sentence_bleu("Москва", "Москва столица России") == pytest.approx(
        100 * math.exp(-2), abs=TOL
    )


def _samples() -> list[Sample]:
    return [
        Sample(trace_id="1", question="q", answer="The cat sat.", reference="The cat sat."),
        Sample(trace_id="2", question="q", answer="", reference="Paris"),
        Sample(trace_id="3", question="q", answer="Paris", reference=None),
        Sample(trace_id="4", question="q", answer=None, reference="Paris"),
        Sample(trace_id="5", question="q", answer=None, reference=None),
    ]


@pytest.mark.parametrize("name", ["rouge1_f", "rouge2_f", "rougeL_f", "bleu"])
def test_registered_text_metrics_skip_missing_texts(name: str) -> None:
    assert name in known_names()
    resolved = resolve(name)
    assert resolved.spec.kind == "per_sample" and resolved.spec.cutoff == "none"
    outcomes = resolved.spec.compute(_samples(), EvalContext(), resolved.k)
    top = 100.0 if name == "bleu" else 1.0
    assert outcomes[0] == Score(pytest.approx(top, abs=TOL))
    assert outcomes[1] == Score(0.0)  # an empty answer is a real (zero) score
    assert outcomes[2] == Skipped("no reference")
    assert outcomes[3] == Skipped("no answer")
    assert outcomes[4] == Skipped("no reference")
