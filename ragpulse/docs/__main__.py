"""`python -m ragpulse.docs [--check]`: write (or check) the generated pages."""

from __future__ import annotations

import sys

from ragpulse.docs.site import main

sys.exit(main())
