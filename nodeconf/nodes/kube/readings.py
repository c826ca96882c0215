"""What a KubeNode reads about its node: the reader pod's answers, the Node object, the running kubelet config
(/configz), the node-level cgroups, conditions and events, the kubelet's metrics, the other pods and the run's
events; node.py holds the run's namespaces and pods."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from nodeconf.cgroup_files import evidence_files
from nodeconf.kubelet_config import KubeletConfig
from nodeconf.manifest import Pod
from nodeconf.nodes.base import CgroupFiles, Metrics, NodeConditions, NodeError, NotApplicable, parse_metrics
from nodeconf.nodes.kube.api import KubeApi, KubeApiError
from nodeconf.nodes.kube.configz import read_running_config, require_running_config
from nodeconf.nodes.kube.facts import kubelet_minor_version
from nodeconf.nodes.kube.others import node_selector, other_pods
from nodeconf.nodes.kube.paths import CgroupFrame
from nodeconf.nodes.kube.pod import Framed
from nodeconf.nodes.kube.pods import HELPER_NAME, READER_CONTAINER, pod_events, reader_argv
from nodeconf.nodes.kube.timeouts import Timeouts


class NodeReadings:
    """The reading half of KubeNode (a mixin: KubeNode sets these attributes)."""

    api: KubeApi
    node: str
    base_namespace: str
    timeouts: Timeouts
    namespaces: list[str]
    paths: dict[str, str]
    notes: list[str]
    _node_obj: dict[str, Any] | None
    _configz: tuple[KubeletConfig, frozenset[str]] | None

    def read(self, op: str, **request: Any) -> dict[str, Any]:
        """One request to the reader pod (one exec round trip); NodeError with the reader's message on failure."""
        out = self.api.exec(self.base_namespace, HELPER_NAME, READER_CONTAINER, reader_argv({"op": op, **request}),
                            self.timeouts.exec)
        try:
            doc = json.loads(out.stdout)
        except ValueError:
            raise NodeError(f"evidence reader on node {self.node} answered no JSON (exit {out.rc}): "
                            f"{(out.stderr or out.stdout).strip()[-300:]}") from None
        if not isinstance(doc, dict):
            raise NodeError(f"evidence reader on node {self.node} answered {type(doc).__name__}, not an object")
        if "error" in doc or out.rc != 0:
            raise NodeError(f"evidence reader on node {self.node}: {doc.get('error', out.stderr.strip())}")
        return doc

    def node_object(self) -> dict[str, Any]:
        if self._node_obj is None:
            self._node_obj = self.api.read_node(self.node)
        return self._node_obj

    def configure(self, config: KubeletConfig, version: str | None = None) -> Sequence[str]:
        """A cluster's kubelet cannot be restarted from here: accept the config the node already runs, refuse
        (KubeletConfigNotApplicable, the check is skipped) any other (configz.require_running_config)."""
        require_running_config(self.node, self.node_object(), self._running(), config, version)
        return ()

    def _running(self) -> tuple[KubeletConfig, frozenset[str]]:
        if self._configz is None:
            config, present = read_running_config(self.api, self.node)
            self._configz = (self._driver_from_layout(config), present)
        return self._configz

    def _driver_from_layout(self, config: KubeletConfig) -> KubeletConfig:
        """The config with the cgroup driver the node's cgroups show (`kubepods.slice`: systemd, `kubepods`:
        cgroupfs). /configz holds the config file's value, recorded before the kubelet asks the runtime for its
        driver (KubeletCgroupDriverFromCRI; cmd/kubelet/app/server.go), so it is only a cross-check: a
        disagreement is reported in logs()."""
        kubepods = str(self.read("node", files=[])["kubepods"]["path"])
        driver = "systemd" if self.frame(kubepods).systemd else "cgroupfs"
        if driver == config.cgroup_driver:
            return config
        self.notes.append(f"cgroup driver: /configz of node {self.node} says {config.cgroup_driver}, its cgroups "
                          f"({kubepods}) are the {driver} driver's: judged as {driver}")
        return replace(config, cgroup_driver=driver)

    def kubelet_version(self) -> str | None:
        """The node's kubelet as `X.Y` (`status.nodeInfo.kubeletVersion`): the profile that judges it."""
        return kubelet_minor_version(self.node_object())

    def running_config(self) -> KubeletConfig | None:
        """The node's running kubelet configuration (/configz, read once): what its provider set is its truth."""
        return self._running()[0]

    def node_cgroups(self, extra_files: Sequence[str] = ()) -> Mapping[str, CgroupFiles]:
        doc = self.read("node", files=evidence_files(extra_files))
        framed = Framed(self.frame(doc["kubepods"]["path"]), {}, self.paths)
        levels = [framed.cgroup(level) for level in [doc["kubepods"], *(doc.get("qos") or {}).values()]]
        return {level.path: level for level in levels}

    def frame(self, kubepods: str) -> CgroupFrame:
        try:
            return CgroupFrame(kubepods)
        except ValueError as err:
            raise NodeError(f"node {self.node}: {err}") from None

    def conditions(self) -> NodeConditions:
        """The Node object's conditions now, and the node's events (the kubelet records them in `default`)."""
        node = self.api.read_node(self.node)
        conditions = {str(c.get("type")): c.get("status") == "True"
                      for c in (node.get("status") or {}).get("conditions") or ()}
        events = self.api.list_events("default", f"involvedObject.kind=Node,involvedObject.name={self.node}")
        return NodeConditions(conditions, pod_events(events))

    def metrics(self) -> Metrics:
        """The kubelet's /metrics through the API server's node proxy; NotApplicable without `get` on
        nodes/proxy."""
        return self._kubelet_metrics("metrics")

    def cadvisor_metrics(self) -> Metrics:
        """The kubelet's /metrics/cadvisor through the node proxy (same permission as /metrics)."""
        return self._kubelet_metrics("metrics/cadvisor")

    def resource_metrics(self) -> Metrics:
        """The kubelet's /metrics/resource through the node proxy (same permission as /metrics)."""
        return self._kubelet_metrics("metrics/resource")

    def stats_summary(self) -> Mapping[str, Any]:
        """The kubelet's /stats/summary through the node proxy (same permission as /metrics)."""
        summary: Mapping[str, Any] = json.loads(self._kubelet_page("stats/summary"))
        return summary

    def _kubelet_metrics(self, path: str) -> Metrics:
        return parse_metrics(self._kubelet_page(path))

    def _kubelet_page(self, path: str) -> str:
        try:
            return self.api.node_proxy(self.node, path)
        except KubeApiError as err:
            if err.status in (401, 403):
                raise NotApplicable(f"the kubelet metrics of node {self.node} cannot be read ({err}); they need "
                                    f"`get` on nodes/proxy (nodeconf/infra/kube/rbac.yaml)") from None
            raise

    def other_pods(self) -> Sequence[Pod]:
        """Every active pod on the node outside the checks' namespaces (the reader pod included), read now."""
        own = [namespace for namespace in self.namespaces if namespace != self.base_namespace]
        return other_pods(self.api.list_pods(node_selector(self.node)), own)

    def logs(self) -> str:
        """The events of this run's namespaces (a cluster's kubelet log is not reachable through the API) and
        the real path of every cgroup the evidence named in the oracle's frame."""
        lines = [*self.notes, *(f"cgroup {path} is {real} on node {self.node}"
                                for path, real in sorted(self.paths.items()) if path != real)]
        for namespace in self.namespaces:
            for item in self.api.list_events(namespace, ""):
                involved = item.get("involvedObject") or {}
                lines.append(f"{namespace}/{involved.get('name', '?')}: {item.get('type', '')} "
                             f"{item.get('reason', '')}: {item.get('message', '')}")
        return "\n".join(lines)
