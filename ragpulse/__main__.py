"""`python -m ragpulse`: the same entry point as the `ragpulse` console script."""

from ragpulse.cli import main

raise SystemExit(main())
