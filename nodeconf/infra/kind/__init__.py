"""kind clusters for the kube driver: the cluster configs (*.yaml), their node image versions and provisioning."""
