"""Transports: run argv on a node and hold one stream — the interface (base), SSH, this machine, an in-process
double."""
