"""Kafka plumbing: the embedded broker, a producer for sample traffic, the trace consumer."""
