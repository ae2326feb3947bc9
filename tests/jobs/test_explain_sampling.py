"""A very large baseline is sampled on PostgreSQL (repeatably); the window never is."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import text

from collector.store.session import make_engine, make_session_factory
from collector.store.slice_stats import CrossTab, cross_tab
from tests.exporters.test_explanations import NOW, _outcomes


def test_the_baseline_is_sampled_past_its_cap_and_the_window_is_whole(postgres_url: str) -> None:
    _outcomes(postgres_url)  # 2,000 baseline rows (hit rate 0.6), 300 in the last hour
    engine = make_engine(postgres_url)
    with make_session_factory(engine)() as session:
        session.execute(text("ANALYZE job_outcomes"))

        def tab(cap: int) -> CrossTab:
            return cross_tab(
                session,
                jobs=["real_users_benchmark"],
                metric="hit_rate@1",
                baseline_since=NOW - timedelta(days=7, hours=1),
                since=NOW - timedelta(hours=1),
                until=NOW,
                dimensions=("tenant", "version"),
                baseline_cap=cap,
            )

        whole, sampled, again = tab(1_000_000), tab(600), tab(600)
    engine.dispose()
    assert whole.n[whole.in_window].sum() == sampled.n[sampled.in_window].sum() == 300
    assert whole.n[~whole.in_window].sum() == 2000
    n = sampled.n[~sampled.in_window].sum()
    assert 150 <= n <= 1500  # about 30% of the pages
    mean = sampled.total[~sampled.in_window].sum() / n
    assert abs(mean - 0.6) < 0.1
    assert list(again.n) == list(sampled.n)  # REPEATABLE: the same sample each time
