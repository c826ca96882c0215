"""A check author's toolkit, one home for the helpers a check uses (README "Adding a check"):

- pods.py: the seed manifests of workloads/ as typed pods, and their variations (renamed, with_container, scaled);
- builders.py: pods written as short resource specs, for tests that need no seed manifest;
- kubelet.py: Kubelet (switch the node's kubelet configuration) and Oracle (what the node should show);
- checks.py: deploy pods and compare their evidence with the oracle (admission, QoS, cgroup files);
- compare.py: the comparison itself, every mismatch with owner, path, file, expected, actual and rule;
- tolerance.py: tested tolerance bands for measured values;
- resize.py, pressure.py: in-place resize decisions and memory-pressure watching.
"""
