"""Conformance suite: swap."""
