"""The bundled reference enforcer: a kubelet-shaped node agent applying the oracle's values (DESIGN.md)."""
