"""Dashboards, alert rules and the generator that writes them (`build.py`)."""
