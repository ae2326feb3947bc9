"""The drift detectors behind the page and ticket alerts.

What a detector is (tuning, false-page budget, points), its CUSUM steps from a
series' bucket sums, its statistic over them, and a job's detectors at a time."""
