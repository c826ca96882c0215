"""Node drivers behind one protocol (base.py): transports (transport/), the enforcer-run driver (enforced/), the
Kubernetes driver (kube/), the node spec (spec.py), a record per node kind (kinds.py) and what a run asks of them
(registry.py)."""
