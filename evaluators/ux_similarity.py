"""Blocked cosine-similarity kernels for the UX metrics (pure numpy, memory bounded).

Rows are unit vectors, so cosine similarity is a dot product. Nothing here builds an
n×n matrix: work proceeds in blocks of `block` rows against `block` columns, so memory is
O(block²) beyond the embeddings themselves, whatever the number of questions.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

BLOCK = 2048


def nearest_earlier_similarity(
    embeddings: np.ndarray,
    times: np.ndarray,
    lookback_s: float,
    block: int = BLOCK,
) -> np.ndarray:
    """For row i (rows sorted by time): max cos(e_i, e_j) over earlier rows j < i with
    times[i] - times[j] <= lookback_s; -inf when there is none.
    """
    emb = np.asarray(embeddings, dtype=np.float32)
    t = np.asarray(times, dtype=np.float64)
    n = emb.shape[0]
    out = np.full(n, -np.inf, dtype=np.float32)
    for b0 in range(0, n, block):
        b1 = min(n, b0 + block)
        rows = emb[b0:b1]
        row_ids = np.arange(b0, b1)
        earliest = t[b0:b1] - lookback_s
        lo = int(np.searchsorted(t, earliest[0], side="left"))
        best = out[b0:b1]
        for c0 in range(lo, b1, block):
            c1 = min(b1, c0 + block)
            sims = rows @ emb[c0:c1].T
            needs_order = c1 > b0  # the block overlaps the rows themselves
            needs_window = t[c0] < earliest[-1]  # some column is too old for some row
            if needs_order or needs_window:
                valid = np.ones(sims.shape, dtype=bool)
                if needs_order:
                    valid &= np.arange(c0, c1)[None, :] < row_ids[:, None]
                if needs_window:
                    valid &= t[c0:c1][None, :] >= earliest[:, None]
                sims[~valid] = -np.inf
            np.maximum(best, sims.max(axis=1), out=best)
    return out


def pair_blocks(
    embeddings: np.ndarray, block: int = BLOCK
) -> Iterator[tuple[int, int, int, int, np.ndarray]]:
    """Upper-triangle blocks of the similarity matrix: (r0, r1, c0, c1, sims) with c0 >= r0.

    Pairs (i, j) with i < j are those where the column index exceeds the row index.
    """
    emb = np.asarray(embeddings, dtype=np.float32)
    n = emb.shape[0]
    for r0 in range(0, n, block):
        r1 = min(n, r0 + block)
        for c0 in range(r0, n, block):
            c1 = min(n, c0 + block)
            yield r0, r1, c0, c1, emb[r0:r1] @ emb[c0:c1].T


def _upper_mask(r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
    return np.arange(c0, c1)[None, :] > np.arange(r0, r1)[:, None]


def rows_in_close_pairs(embeddings: np.ndarray, threshold: float, block: int = BLOCK) -> np.ndarray:
    """Boolean per row: does the row have another row with cos >= threshold?"""
    n = embeddings.shape[0]
    flag = np.zeros(n, dtype=bool)
    for r0, r1, c0, c1, sims in pair_blocks(embeddings, block):
        close = (sims >= threshold) & _upper_mask(r0, r1, c0, c1)
        flag[r0:r1] |= close.any(axis=1)
        flag[c0:c1] |= close.any(axis=0)
    return flag


def agreeing_close_pairs(
    questions: np.ndarray,
    answers: np.ndarray,
    has_answer: np.ndarray,
    question_threshold: float,
    answer_threshold: float,
    block: int = BLOCK,
) -> tuple[int, int]:
    """(agreeing, total) over pairs i < j with cos(q_i, q_j) >= question_threshold and both
    answers present; agreeing when cos(a_i, a_j) >= answer_threshold.
    """
    agree = 0
    total = 0
    ans = np.asarray(answers, dtype=np.float32)
    for r0, r1, c0, c1, sims in pair_blocks(questions, block):
        close = (sims >= question_threshold) & _upper_mask(r0, r1, c0, c1)
        close &= has_answer[r0:r1, None] & has_answer[None, c0:c1]
        count = int(close.sum())
        if not count:
            continue
        answer_sims = ans[r0:r1] @ ans[c0:c1].T
        total += count
        agree += int((close & (answer_sims >= answer_threshold)).sum())
    return agree, total
