"""Node drivers: one protocol, several nodes (the reference VM over SSH, local, Kubernetes)."""
