"""The node's CRI runtime (containerd) driven over the CRI v1 API, as a kubelet drives it (issue 28)."""
