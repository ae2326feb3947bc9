"""The dashboards' sections, one module each, built with grafana-foundation-sdk:
`quality` (a scheduled job's row, from the registry) serves the `retrieval`, `generation`,
`judge` and `ux` sections of the overview, beside `versions`, `canary` and `alerting`;
`operations` and the judge's own health make the operations dashboard, `drilldown` the
score distributions. `layout` places them on the grid, `common` holds what they share."""
