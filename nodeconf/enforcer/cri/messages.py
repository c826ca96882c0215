"""The CRI v1 messages the enforcer uses, with the field numbers of the CRI's api.proto (only the fields used).

Source: kubernetes/cri-api pkg/apis/runtime/v1/api.proto (package runtime.v1; Debian golang-k8s-cri-api-dev ships
it); numbers checked in tests against the generated descriptors of PyPI's container-runtime-interface-api 2.0.1.
"""

from __future__ import annotations

from nodeconf.enforcer.cri.proto import Field, Schema

RUNTIME_SERVICE = "/runtime.v1.RuntimeService/"
IMAGE_SERVICE = "/runtime.v1.ImageService/"

# enum ContainerState; enum PodSandboxState; enum NamespaceMode
CONTAINER_CREATED, CONTAINER_RUNNING, CONTAINER_EXITED, CONTAINER_UNKNOWN = 0, 1, 2, 3
SANDBOX_READY, SANDBOX_NOTREADY = 0, 1
NAMESPACE_POD, NAMESPACE_CONTAINER, NAMESPACE_NODE = 0, 1, 2

def _map(number: int) -> Field:
    return Field(number, "map")


KEY_VALUE: Schema = {"key": Field(1, "string"), "value": Field(2, "string")}
POD_SANDBOX_METADATA: Schema = {"name": Field(1, "string"), "uid": Field(2, "string"),
                                "namespace": Field(3, "string"), "attempt": Field(4, "uint32")}
NAMESPACE_OPTION: Schema = {"network": Field(1, "enum"), "pid": Field(2, "enum"), "ipc": Field(3, "enum")}
LINUX_SANDBOX_SECURITY_CONTEXT: Schema = {"namespace_options": Field(1, "message", NAMESPACE_OPTION),
                                          "privileged": Field(6, "bool")}
HUGEPAGE_LIMIT: Schema = {"page_size": Field(1, "string"), "limit": Field(2, "uint64")}
LINUX_CONTAINER_RESOURCES: Schema = {
    "cpu_period": Field(1, "int64"), "cpu_quota": Field(2, "int64"), "cpu_shares": Field(3, "int64"),
    "memory_limit_in_bytes": Field(4, "int64"), "oom_score_adj": Field(5, "int64"),
    "cpuset_cpus": Field(6, "string"), "cpuset_mems": Field(7, "string"),
    "hugepage_limits": Field(8, "message", HUGEPAGE_LIMIT, repeated=True), "unified": _map(9),
    "memory_swap_limit_in_bytes": Field(10, "int64"),
}
LINUX_POD_SANDBOX_CONFIG: Schema = {
    "cgroup_parent": Field(1, "string"),
    "security_context": Field(2, "message", LINUX_SANDBOX_SECURITY_CONTEXT),
    "overhead": Field(4, "message", LINUX_CONTAINER_RESOURCES),
    "resources": Field(5, "message", LINUX_CONTAINER_RESOURCES),
}
POD_SANDBOX_CONFIG: Schema = {
    "metadata": Field(1, "message", POD_SANDBOX_METADATA), "hostname": Field(2, "string"),
    "log_directory": Field(3, "string"), "labels": _map(6), "annotations": _map(7),
    "linux": Field(8, "message", LINUX_POD_SANDBOX_CONFIG),
}
CONTAINER_METADATA: Schema = {"name": Field(1, "string"), "attempt": Field(2, "uint32")}
IMAGE_SPEC: Schema = {"image": Field(1, "string")}
MOUNT: Schema = {"container_path": Field(1, "string"), "host_path": Field(2, "string"),
                 "readonly": Field(3, "bool")}
LINUX_CONTAINER_SECURITY_CONTEXT: Schema = {"privileged": Field(2, "bool"),
                                            "namespace_options": Field(3, "message", NAMESPACE_OPTION)}
LINUX_CONTAINER_CONFIG: Schema = {"resources": Field(1, "message", LINUX_CONTAINER_RESOURCES),
                                  "security_context": Field(2, "message", LINUX_CONTAINER_SECURITY_CONTEXT)}
CONTAINER_CONFIG: Schema = {
    "metadata": Field(1, "message", CONTAINER_METADATA), "image": Field(2, "message", IMAGE_SPEC),
    "command": Field(3, "string", repeated=True), "args": Field(4, "string", repeated=True),
    "working_dir": Field(5, "string"), "envs": Field(6, "message", KEY_VALUE, repeated=True),
    "mounts": Field(7, "message", MOUNT, repeated=True), "labels": _map(9), "annotations": _map(10),
    "log_path": Field(11, "string"), "linux": Field(15, "message", LINUX_CONTAINER_CONFIG),
}

# Requests and responses, by method name: (request schema, response schema).
RUN_POD_SANDBOX = ({"config": Field(1, "message", POD_SANDBOX_CONFIG), "runtime_handler": Field(2, "string")},
                   {"pod_sandbox_id": Field(1, "string")})
POD_SANDBOX_ID: Schema = {"pod_sandbox_id": Field(1, "string")}
POD_SANDBOX_STATUS = ({"pod_sandbox_id": Field(1, "string"), "verbose": Field(2, "bool")},
                      {"status": Field(1, "message", {"id": Field(1, "string"), "state": Field(3, "enum"),
                                                      "labels": _map(7)}),
                       "info": _map(2)})
POD_SANDBOX: Schema = {"id": Field(1, "string"), "metadata": Field(2, "message", POD_SANDBOX_METADATA),
                       "state": Field(3, "enum"), "labels": _map(5)}
LIST_POD_SANDBOX = ({"filter": Field(1, "message", {"id": Field(1, "string"), "label_selector": _map(3)})},
                    {"items": Field(1, "message", POD_SANDBOX, repeated=True)})
CREATE_CONTAINER = ({"pod_sandbox_id": Field(1, "string"), "config": Field(2, "message", CONTAINER_CONFIG),
                     "sandbox_config": Field(3, "message", POD_SANDBOX_CONFIG)},
                    {"container_id": Field(1, "string")})
CONTAINER_ID: Schema = {"container_id": Field(1, "string")}
STOP_CONTAINER: tuple[Schema, Schema] = ({"container_id": Field(1, "string"), "timeout": Field(2, "int64")}, {})
UPDATE_CONTAINER_RESOURCES: tuple[Schema, Schema] = ({"container_id": Field(1, "string"),
                               "linux": Field(2, "message", LINUX_CONTAINER_RESOURCES)}, {})
CONTAINER_STATUS_FIELDS: Schema = {
    "id": Field(1, "string"), "metadata": Field(2, "message", CONTAINER_METADATA), "state": Field(3, "enum"),
    "created_at": Field(4, "int64"), "started_at": Field(5, "int64"), "finished_at": Field(6, "int64"),
    "exit_code": Field(7, "int32"), "reason": Field(10, "string"), "message": Field(11, "string"),
    "labels": _map(12), "resources": Field(16, "message", {"linux": Field(1, "message", LINUX_CONTAINER_RESOURCES)}),
}
CONTAINER_STATUS = ({"container_id": Field(1, "string"), "verbose": Field(2, "bool")},
                    {"status": Field(1, "message", CONTAINER_STATUS_FIELDS), "info": _map(2)})
CONTAINER: Schema = {"id": Field(1, "string"), "pod_sandbox_id": Field(2, "string"),
                     "metadata": Field(3, "message", CONTAINER_METADATA), "state": Field(6, "enum"),
                     "labels": _map(8)}
LIST_CONTAINERS = ({"filter": Field(1, "message", {"id": Field(1, "string"), "pod_sandbox_id": Field(3, "string"),
                                                   "label_selector": _map(4)})},
                   {"containers": Field(1, "message", CONTAINER, repeated=True)})
VERSION = ({"version": Field(1, "string")},
           {"version": Field(1, "string"), "runtime_name": Field(2, "string"),
            "runtime_version": Field(3, "string"), "runtime_api_version": Field(4, "string")})
STATUS = ({"verbose": Field(1, "bool")},
          {"status": Field(1, "message", {"conditions": Field(1, "message", {
              "type": Field(1, "string"), "status": Field(2, "bool"), "reason": Field(3, "string"),
              "message": Field(4, "string")}, repeated=True)}),
           "info": _map(2)})
IMAGE_STATUS = ({"image": Field(1, "message", IMAGE_SPEC), "verbose": Field(2, "bool")},
                {"image": Field(1, "message", {"id": Field(1, "string"),
                                               "repo_tags": Field(2, "string", repeated=True),
                                               "size": Field(4, "uint64")})})
REMOVE_IMAGE: tuple[Schema, Schema] = ({"image": Field(1, "message", IMAGE_SPEC)}, {})
