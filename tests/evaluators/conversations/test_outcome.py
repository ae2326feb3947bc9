"""A session's outcome from its turns: re-asks, escalation, abandonment, feedback."""

from __future__ import annotations

import numpy as np
import pytest

from evaluators.conversations import SessionOutcome, Turn, session_outcome

THRESHOLD = 0.71


def _rows(*angles: float) -> np.ndarray:
    """Unit rows in a plane; cos between rows i and j is cos(angle_i - angle_j)."""
    a = np.radians(np.asarray(angles))
    return np.stack([np.cos(a), np.sin(a)], axis=1)


def _turns(*questions: str, bad_last: bool = False) -> list[Turn]:
    return [
        Turn(f"t{i}", q, "answer", 1000.0 + i, {}, bad_answer=bad_last and i == len(questions) - 1)
        for i, q in enumerate(questions)
    ]


def test_a_paraphrase_later_marks_the_earlier_answer_re_asked() -> None:
    turns = _turns("How do I reset my password?", "I forgot my password, what should I do?")
    out = session_outcome(turns, _rows(0, 20), THRESHOLD)
    assert [t.re_asked for t in out.turns] == [True, False]
    assert out.re_asks == 1
    assert not out.resolved and out.turns_to_resolution is None
    assert out.abandoned  # the session ended on the re-ask


def test_close_embeddings_with_the_entity_swapped_are_a_follow_up() -> None:
    turns = _turns("How long is delivery to Moscow?", "How long is delivery to Kazan?")
    out = session_outcome(turns, _rows(0, 10), THRESHOLD)
    assert out.re_asks == 0
    assert out.resolved and out.turns_to_resolution == 2


def test_an_elliptical_follow_up_is_not_a_re_ask() -> None:
    turns = _turns("Сколько стоит доставка в Москву?", "а в Казань?")
    out = session_outcome(turns, _rows(0, 5), THRESHOLD)
    assert out.re_asks == 0 and out.resolved


def test_far_below_the_threshold_is_not_a_re_ask() -> None:
    turns = _turns("How do I reset my password?", "I forgot my password, what should I do?")
    out = session_outcome(turns, _rows(0, 80), THRESHOLD)
    assert out.re_asks == 0 and out.resolved


def test_escalation_by_words_and_by_tag() -> None:
    turns = [
        Turn("a", "What is the card fee?", "1%", 1.0, {}),
        Turn("b", "позовите оператора", "ok", 2.0, {}),
        Turn("c", "fine", "ok", 3.0, {"escalated": "true"}),
    ]
    out = session_outcome(turns, _rows(0, 90, 180), THRESHOLD)
    assert [t.escalation for t in out.turns] == [False, True, True]
    assert out.escalated and not out.resolved


def test_two_requests_for_a_person_are_escalation_not_a_re_ask() -> None:
    turns = _turns("оператор", "позовите оператора!")
    out = session_outcome(turns, _rows(0, 1), THRESHOLD)
    assert out.re_asks == 0 and out.escalated


def test_negative_feedback_is_not_resolved_positive_is() -> None:
    bad = [Turn("a", "What is the fee?", "1%", 1.0, {}, feedback=-1.0)]
    good = [Turn("a", "What is the fee?", "1%", 1.0, {}, feedback=1.0)]
    assert not session_outcome(bad, _rows(0), THRESHOLD).resolved
    assert session_outcome(bad, _rows(0), THRESHOLD).negative_feedback
    assert session_outcome(good, _rows(0), THRESHOLD).resolved


def test_abandoned_after_a_bad_last_answer_only() -> None:
    turns = _turns("What is the fee?", "And for business accounts?", bad_last=True)
    out = session_outcome(turns, _rows(0, 90), THRESHOLD)
    assert out.abandoned
    early = [Turn("a", "What is the fee?", None, 1.0, {}, bad_answer=True), *_turns("thanks")]
    assert not session_outcome(early, _rows(0, 90), THRESHOLD).abandoned


def test_outcome_is_a_frozen_value() -> None:
    out = session_outcome(_turns("hi"), _rows(0), THRESHOLD)
    assert isinstance(out, SessionOutcome)
    with pytest.raises(AttributeError):
        out.resolved = False  # type: ignore[misc]


def test_inputs_checked() -> None:
    with pytest.raises(ValueError, match="at least one turn"):
        session_outcome([], np.zeros((0, 2)), THRESHOLD)
    with pytest.raises(ValueError, match="one row per turn"):
        session_outcome(_turns("a", "b"), _rows(0), THRESHOLD)


def test_the_threshold_is_the_models_cache_threshold_and_signed() -> None:
    from evaluators.conversations import outcome_signature, re_ask_threshold

    assert re_ask_threshold({}, "use-multilingual-v3") == 0.71
    assert re_ask_threshold({"threshold_mode": "strict"}, "use-multilingual-v3") == 0.77
    assert re_ask_threshold({"cache_similarity_threshold": 0.8}, "use-multilingual-v3") == 0.8
    sig = outcome_signature({}, "use-multilingual-v3")
    assert "|emb:use-multilingual-v3|thr:cache=0.71(cal),reask=lr:" in str(sig)


def test_rows_are_read_as_directions() -> None:
    turns = _turns("How do I reset my password?", "I forgot my password, what should I do?")
    scaled = _rows(0, 20) * np.array([[3.0], [0.5]])
    assert session_outcome(turns, scaled, THRESHOLD).re_asks == 1
    zero = np.vstack([_rows(0), np.zeros((1, 2))])
    assert session_outcome(turns, zero, THRESHOLD).re_asks == 0
