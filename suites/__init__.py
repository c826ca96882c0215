"""Conformance suites grouped by source: swap, memory_qos, resources."""
