"""Suites mirroring the Kubernetes repository's node e2e tests (test/e2e/common/node)."""
