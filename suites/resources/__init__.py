"""Conformance suite: resources."""
