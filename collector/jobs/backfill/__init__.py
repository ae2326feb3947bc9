"""Back-fill: windows and detectors at past times.

A job's windows and detectors as they were, on one process or several."""
