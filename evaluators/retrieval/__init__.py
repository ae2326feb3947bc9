"""Retrieval metrics (Tier 1): `hit_rate@k`, `mrr`, `mrr@k`, `recall@k`, `precision@k`,
`ndcg@k`, with the conventions of NIST trec_eval.

Each family module holds a pure numpy kernel over a (queries x ranks) matrix of judged
grades plus the registered per-sample `compute`; `judgments` builds that matrix from
samples, `metric` turns a family's kernel over it into per-sample outcomes, and `keys`
normalizes document keys.
"""
