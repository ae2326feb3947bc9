"""Keeping a claim's shard lease alive while its traces are scored (`sharded.py`).

A judge batch can take minutes, longer than a lease: `LeaseKeeper` renews it every third
of its length on a thread of its own, so only a worker that died or stalled loses its
shards. The thread does nothing but that one UPDATE; the scoring stays on the run's thread.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType

from collector.jobs.sharding.leases import ShardLeases

logger = logging.getLogger(__name__)


class LeaseKeeper:
    """Renews a claim's lease every third of it, on a thread of its own, while the claimed
    traces are scored (a `with` block). A failed renewal is logged and tried again; a
    lease found taken over sets `lost` (the fenced `finish` will refuse the work)."""

    def __init__(self, leases: ShardLeases, shards: list[int]) -> None:
        self.leases = leases
        self.shards = shards
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name=f"ragpulse-lease-{leases.job}", daemon=True
        )

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def add(self, shards: list[int]) -> None:
        """Keep the lease on more shards too (claimed to fill the batch)."""
        self.shards = [*self.shards, *shards]

    def remove(self, shards: list[int]) -> None:
        """Stop keeping the lease on `shards` (released before the batch)."""
        gone = set(shards)
        self.shards = [s for s in self.shards if s not in gone]

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.leases.config.lease_s / 3):
            shards = self.shards
            try:
                kept = self.leases.renew(shards)
            except Exception:
                logger.exception("job %s: could not renew the shard lease", self.leases.job)
                continue
            if kept < len(shards) and not self.lost:
                self.lost = True
                logger.warning(
                    "job %s: lost the lease on shard(s) of %s (taken over after a stall)",
                    self.leases.job,
                    ",".join(map(str, shards)),
                )
