"""Operations: /healthz and Prometheus /metrics on METRICS_PORT while the bot or the console runs (off by default)."""
