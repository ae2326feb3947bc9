"""Static HTML reports: the Grafana dashboards drawn from Prometheus (`ragpulse report`)
and an offline evaluation's results (`ragpulse evaluate --output-html`)."""
