"""The Kubernetes node driver: one node of a cluster through its API and a reader pod on the node."""
