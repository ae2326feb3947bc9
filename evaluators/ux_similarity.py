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
    rows: np.ndarray | None = None,
) -> np.ndarray:
    """For row i (rows sorted by time): max cos(e_i, e_j) over earlier rows j < i with
    times[i] - times[j] <= lookback_s; -inf when there is none.

    `rows` (ascending indices) limits the work to those rows: the result then has one
    value per index in `rows`, each still taken over all earlier rows.
    """
    emb = np.asarray(embeddings, dtype=np.float32)
    t = np.asarray(times, dtype=np.float64)
    queries = np.arange(emb.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
    out = np.full(queries.size, -np.inf, dtype=np.float32)
    for b0 in range(0, queries.size, block):
        row_ids = queries[b0 : b0 + block]
        block_rows = emb[b0 : b0 + row_ids.size] if rows is None else emb[row_ids]
        earliest = t[row_ids] - lookback_s
        lo = int(np.searchsorted(t, earliest[0], side="left"))
        end = int(row_ids[-1]) + 1
        best = out[b0 : b0 + row_ids.size]
        for c0 in range(lo, end, block):
            c1 = min(end, c0 + block)
            sims = block_rows @ emb[c0:c1].T
            needs_order = c1 > row_ids[0]  # some column is not earlier than some row
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
