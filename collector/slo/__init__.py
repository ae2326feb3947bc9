"""Quality SLO bookkeeping.

Each trace's SLO events counted once, and how far an SLO's budget can be trusted
against the human labels."""
