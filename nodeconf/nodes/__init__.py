"""Node drivers behind one protocol (base.py): transports (transport/), the enforcer-run driver (enforced/), the
Kubernetes driver (kube/), the node spec (spec.py) and the scheme → opener registry (registry.py)."""
