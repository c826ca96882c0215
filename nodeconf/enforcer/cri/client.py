"""A CRI v1 client on the runtime's unix socket: the RuntimeService and ImageService calls a kubelet makes.

Each call is bounded as the kubelet bounds it (kubernetes staging/src/k8s.io/cri-client/pkg/remote_runtime.go,
remoteRuntimeService, whose `timeout` is the KubeletConfiguration's runtimeRequestTimeout, handed over by
pkg/kubelet/kubelet.go PreInitRuntimeService): RunPodSandbox by twice it, StopContainer by it plus the stop's grace
seconds, every other call here (Version, Status, CreateContainer, StartContainer, ContainerStatus,
UpdateContainerResources, the sandbox and list calls) by it. A StartContainer past its deadline is a failed start
to the kubelet (kuberuntime_container.go startContainer: a FailedToStartContainer event, ErrRunContainer); the
container stays in the created state, and the next SyncPod starts a new one (pkg/kubelet/container/helpers.go
ShouldContainerBeRestarted: "Always restart container in the unknown, or in the created state").

Source: kubernetes/cri-api pkg/apis/runtime/v1/api.proto (service RuntimeService, ImageService); containerd's and
CRI-O's default sockets.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from nodeconf.enforcer.cri import messages as m
from nodeconf.enforcer.cri.grpc import CALL_TIMEOUT, call
from nodeconf.enforcer.cri.proto import Schema, decode, encode
from nodeconf.enforcer.daemons import CONTAINERD_SOCKET

# A call slower than this is logged with its time (as oci_runtime.SLOW_COMMAND): the agent holds its lock meanwhile.
SLOW_CALL = 5.0
logger = logging.getLogger(__name__)  # below the agent's "nodeconf.enforcer"


class CriClient:
    """One runtime endpoint; each method is one unary call bounded by the kubelet's runtimeRequestTimeout."""

    def __init__(self, socket_path: str = CONTAINERD_SOCKET, timeout: float = CALL_TIMEOUT) -> None:
        self.socket_path = socket_path
        self.timeout = timeout

    def _call(self, service: str, name: str, schemas: tuple[Schema, Schema], request: Mapping[str, Any],
              bound: float | None = None) -> dict[str, Any]:
        started = time.monotonic()
        try:
            answer = call(self.socket_path, service + name, encode(schemas[0], request),
                          self.timeout if bound is None else bound)
        finally:
            took = time.monotonic() - started
            if took > SLOW_CALL:
                logger.warning("CRI %s took %.1f s", name, took)
        return decode(schemas[1], answer)

    def _runtime(self, name: str, schemas: tuple[Schema, Schema], bound: float | None = None,
                 **request: Any) -> dict[str, Any]:
        return self._call(m.RUNTIME_SERVICE, name, schemas, request, bound)

    def version(self) -> dict[str, Any]:
        return self._runtime("Version", m.VERSION, version="v1")

    def status(self, verbose: bool = False) -> dict[str, Any]:
        return self._runtime("Status", m.STATUS, verbose=verbose)

    def run_pod_sandbox(self, config: Mapping[str, Any]) -> str:
        return str(self._runtime("RunPodSandbox", m.RUN_POD_SANDBOX, 2 * self.timeout, config=config)
                   .get("pod_sandbox_id", ""))

    def stop_pod_sandbox(self, sandbox_id: str) -> None:
        self._runtime("StopPodSandbox", (m.POD_SANDBOX_ID, {}), pod_sandbox_id=sandbox_id)

    def remove_pod_sandbox(self, sandbox_id: str) -> None:
        self._runtime("RemovePodSandbox", (m.POD_SANDBOX_ID, {}), pod_sandbox_id=sandbox_id)

    def pod_sandbox_status(self, sandbox_id: str, verbose: bool = False) -> dict[str, Any]:
        return self._runtime("PodSandboxStatus", m.POD_SANDBOX_STATUS, pod_sandbox_id=sandbox_id, verbose=verbose)

    def list_pod_sandbox(self, labels: Mapping[str, str]) -> list[dict[str, Any]]:
        found = self._runtime("ListPodSandbox", m.LIST_POD_SANDBOX, filter={"label_selector": dict(labels)})
        return list(found.get("items", []))

    def create_container(self, sandbox_id: str, config: Mapping[str, Any],
                         sandbox_config: Mapping[str, Any]) -> str:
        return str(self._runtime("CreateContainer", m.CREATE_CONTAINER, pod_sandbox_id=sandbox_id, config=config,
                                 sandbox_config=sandbox_config).get("container_id", ""))

    def start_container(self, container_id: str) -> None:
        self._runtime("StartContainer", (m.CONTAINER_ID, {}), container_id=container_id)

    def stop_container(self, container_id: str, timeout: int = 0) -> None:
        self._runtime("StopContainer", m.STOP_CONTAINER, self.timeout + timeout, container_id=container_id,
                      timeout=timeout)

    def remove_container(self, container_id: str) -> None:
        self._runtime("RemoveContainer", (m.CONTAINER_ID, {}), container_id=container_id)

    def update_container_resources(self, container_id: str, linux: Mapping[str, Any]) -> None:
        self._runtime("UpdateContainerResources", m.UPDATE_CONTAINER_RESOURCES, container_id=container_id,
                      linux=linux)

    def container_status(self, container_id: str, verbose: bool = False) -> dict[str, Any]:
        return self._runtime("ContainerStatus", m.CONTAINER_STATUS, container_id=container_id, verbose=verbose)

    def list_containers(self, sandbox_id: str = "") -> list[dict[str, Any]]:
        found = self._runtime("ListContainers", m.LIST_CONTAINERS, filter={"pod_sandbox_id": sandbox_id})
        return list(found.get("containers", []))

    def image_status(self, image: str) -> dict[str, Any] | None:
        """The image's id and tags, None when the runtime does not have it."""
        found = self._call(m.IMAGE_SERVICE, "ImageStatus", m.IMAGE_STATUS, {"image": {"image": image}})
        return found.get("image")
