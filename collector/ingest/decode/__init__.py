"""Decoders: Kafka message values -> validated trace records, feedback events, OTLP fragments."""
