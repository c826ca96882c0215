"""The oracle: pure functions from pods, node facts and kubelet config to expected node state."""
