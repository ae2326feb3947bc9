"""Bundled sample traffic for `ragpulse demo`: a small knowledge base and a generator."""
