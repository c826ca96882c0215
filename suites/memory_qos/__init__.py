"""Conformance suite: memory_qos."""
