"""Text-overlap metrics (Tiers 2/3): `rouge1_f`, `rouge2_f`, `rougeL_f` and sentence `bleu`.

Self-contained re-implementations that equal the reference packages (rouge-score,
sacrebleu) on English, and also work on Cyrillic and other scripts.
"""
