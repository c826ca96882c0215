"""Checks of a cluster node as its provider configured it (issue 29)."""
