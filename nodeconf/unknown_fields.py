"""Fields an input document has that its Kubernetes type does not: each named with the field most likely meant.

A misspelled field is not an error to a lenient decoder, it is a field dropped: `resource:` for `resources:` makes
a Guaranteed pod BestEffort. The API server names such fields in a warning by default (fieldValidation=Warn,
KEP-2885 "Server Side Unknown Field Validation") and refuses them with fieldValidation=Strict; nodeconf does the
same, warning by default and refusing under `--strict` (issue 32).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodeconf.errors import MAX_SHOWN, InputError, shown

# difflib's similarity ratio above which a known field is offered as the one meant (its default, 0.6).
CLOSE_ENOUGH = 0.6


@dataclass(frozen=True)
class Fields:
    """The field names of one Kubernetes type, and the types of the fields nodeconf looks inside."""

    names: frozenset[str]
    nested: Mapping[str, Fields] = field(default_factory=dict)

    def leaves(self, prefix: str = "") -> Iterator[tuple[str, str]]:
        """(name, dotted path) of every field of the nested types, for a field written one level too high."""
        for name, child in self.nested.items():
            for leaf in sorted(child.names):
                yield leaf, f"{prefix}{name}.{leaf}"
            yield from child.leaves(f"{prefix}{name}.")


def fields(names: str, **nested: Fields) -> Fields:
    """A type's fields from a space-separated list; the nested types' fields count as names too."""
    return Fields(frozenset(names.split()) | frozenset(nested), nested)


def _cut(name: str) -> str:
    """A field name as a message shows it: one line, at most MAX_SHOWN characters."""
    flat = " ".join(name.split())
    return flat if len(flat) <= MAX_SHOWN else flat[: MAX_SHOWN - 3] + "..."


def _suggestion(name: str, known: Fields) -> str:
    """The known field `name` most likely means: a close spelling at its level, else a field of a nested type
    (`swapBehavior` written beside `memorySwap` instead of in it); "" when none is close."""
    near = difflib.get_close_matches(name, sorted(known.names), n=1, cutoff=CLOSE_ENOUGH)
    if near:
        return near[0]
    leaves = dict(known.leaves())
    near = difflib.get_close_matches(name, sorted(leaves), n=1, cutoff=CLOSE_ENOUGH)
    return leaves[near[0]] if near else ""


def unknown_fields(doc: Mapping[str, Any], known: Fields, path: str = "") -> Iterator[tuple[str, str]]:
    """(field path, the field probably meant or "") of every field of `doc` its type does not have, looking
    inside the nested types `known` names (mappings, and lists of mappings)."""
    for key, value in doc.items():
        name = str(key)
        where = f"{path}.{_cut(name)}" if path else _cut(name)
        if name not in known.names:
            yield where, _suggestion(name, known)
            continue
        child = known.nested.get(name)
        if child is None:
            continue
        if isinstance(value, Mapping):
            yield from unknown_fields(value, child, where)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, Mapping):
                    yield from unknown_fields(item, child, f"{where}[{i}]")


def unknown_field_error(where: str, meant: str, *, source: str, obj: str) -> InputError:
    """The one line naming an unknown field, in the API server's words (`unknown field "spec.x"`)."""
    hint = f' (did you mean "{meant}"?)' if meant else ""
    return InputError(f'unknown field "{where}"{hint}', source=source, obj=obj)


# Field names of the types nodeconf reads (staging/src/k8s.io/api core/v1, apps/v1, batch/v1 types.go json tags),
# so that a misspelled one is named (nodeconf.unknown_fields); nested: the types nodeconf looks inside.
_RESOURCES = fields("claims limits requests")
_CONTAINER = fields(
    "args command env envFrom image imagePullPolicy lifecycle livenessProbe name ports readinessProbe restartPolicy "
    "restartPolicyRules securityContext startupProbe stdin stdinOnce terminationMessagePath "
    "terminationMessagePolicy tty volumeDevices volumeMounts workingDir",
    resources=_RESOURCES, resizePolicy=fields("resourceName restartPolicy"),
)
_POD_SPEC = fields(
    "activeDeadlineSeconds affinity automountServiceAccountToken dnsConfig dnsPolicy enableServiceLinks "
    "ephemeralContainers evictionResponders hostAliases hostIPC hostNetwork hostPID hostUsers hostname "
    "hostnameOverride imagePullSecrets nodeName nodeSelector os overhead preemptionPolicy priority "
    "priorityClassName readinessGates resourceClaims restartPolicy runtimeClassName schedulerName schedulingGates "
    "schedulingGroup securityContext serviceAccount serviceAccountName setHostnameAsFQDN shareProcessNamespace "
    "subdomain terminationGracePeriodSeconds tolerations topologySpreadConstraints volumes",
    containers=_CONTAINER, initContainers=_CONTAINER, resources=_RESOURCES,
)
_OBJECT_META = fields(
    "annotations creationTimestamp deletionGracePeriodSeconds deletionTimestamp finalizers generateName generation "
    "labels managedFields name namespace ownerReferences resourceVersion selfLink uid"
)
_TEMPLATE = fields("", metadata=_OBJECT_META, spec=_POD_SPEC)
_WORKLOAD = "minReadySeconds selector"
_JOB_SPEC = fields(
    "activeDeadlineSeconds backoffLimit backoffLimitPerIndex completionMode completions managedBy manualSelector "
    "maxFailedIndexes parallelism podFailurePolicy podReplacementPolicy scheduling selector successPolicy suspend "
    "ttlSecondsAfterFinished", template=_TEMPLATE,
)


def _object(spec: Fields, top: str = "apiVersion kind status") -> Fields:
    return fields(top, metadata=_OBJECT_META, spec=spec)


MANIFEST_FIELDS: Mapping[str, Fields] = {
    "Pod": _object(_POD_SPEC),
    "LimitRange": _object(fields("", limits=fields("default defaultRequest max maxLimitRequestRatio min type")),
                          "apiVersion kind"),
    "ResourceQuota": _object(fields("hard scopeSelector scopes")),
    "Deployment": _object(fields(f"{_WORKLOAD} paused progressDeadlineSeconds replicas revisionHistoryLimit "
                                 "strategy", template=_TEMPLATE)),
    "StatefulSet": _object(fields(f"{_WORKLOAD} ordinals persistentVolumeClaimRetentionPolicy podManagementPolicy "
                                  "replicas revisionHistoryLimit serviceName updateStrategy volumeClaimTemplates",
                                  template=_TEMPLATE)),
    "DaemonSet": _object(fields(f"{_WORKLOAD} revisionHistoryLimit updateStrategy", template=_TEMPLATE)),
    "ReplicaSet": _object(fields(f"{_WORKLOAD} replicas", template=_TEMPLATE)),
    "ReplicationController": _object(fields(f"{_WORKLOAD} replicas", template=_TEMPLATE)),
    "Job": _object(_JOB_SPEC),
    "CronJob": _object(fields(
        "concurrencyPolicy failedJobsHistoryLimit schedule startingDeadlineSeconds successfulJobsHistoryLimit "
        "suspend timeZone", jobTemplate=fields("", metadata=_OBJECT_META, spec=_JOB_SPEC),
    )),
}


def unknown_manifest_fields(doc: Any, source: str = "") -> list[InputError]:
    """One error per field of a manifest document its kind does not have (none for a kind nodeconf refuses), and
    for a field it has that changes the pod's values in a way nodeconf cannot know."""
    kind = doc.get("kind") if isinstance(doc, Mapping) else None
    known = MANIFEST_FIELDS.get(kind) if isinstance(kind, str) else None
    if known is None or not isinstance(kind, str):
        return []
    meta = doc.get("metadata")
    obj = f"{kind}/{meta.get('name', '') if isinstance(meta, Mapping) else ''}"
    return [*(unknown_field_error(where, meant, source=source, obj=obj) for where, meant in unknown_fields(doc, known)),
            *_overhead_unknown(doc, kind, source, obj)]


# Where a kind keeps its pod spec (LimitRange and ResourceQuota have none).
_POD_SPEC_AT: Mapping[str, tuple[str, ...]] = {
    "Pod": ("spec",), "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    **{kind: ("spec", "template", "spec")
       for kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job")},
}


def _overhead_unknown(doc: Mapping[str, Any], kind: str, source: str, obj: str) -> Iterator[InputError]:
    """A runtimeClassName without spec.overhead: admission would add the class's overhead to the pod's cgroup
    values (pod overhead, KEP-688), which nodeconf cannot see."""
    path = _POD_SPEC_AT.get(kind, ())
    spec: Any = doc if path else None
    for key in path:
        spec = spec.get(key) if isinstance(spec, Mapping) else None
    if isinstance(spec, Mapping) and spec.get("runtimeClassName") and spec.get("overhead") is None:
        yield InputError("admission adds the RuntimeClass's overhead to the pod (pod overhead, KEP-688), which "
                         "nodeconf cannot see: give it as spec.overhead", source=source, obj=obj,
                         field=".".join((*path, "runtimeClassName")))


# KubeletConfiguration's fields (staging/src/k8s.io/kubelet/config/v1beta1/types.go json tags, with TypeMeta's
# apiVersion and kind); memorySwap is looked inside (swapBehavior decides the swap verdicts).
CONFIG_FIELDS = fields(
    "apiVersion kind enableServer staticPodPath podLogsDir syncFrequency fileCheckFrequency httpCheckFrequency "
    "staticPodURL staticPodURLHeader address port readOnlyPort tlsCertFile tlsPrivateKeyFile tlsCipherSuites "
    "tlsCurvePreferences tlsMinVersion rotateCertificates serverTLSBootstrap authentication authorization "
    "registryPullQPS registryBurst imagePullCredentialsVerificationPolicy preloadedImagesVerificationAllowlist "
    "eventRecordQPS eventBurst enableDebuggingHandlers enableContentionProfiling healthzPort healthzBindAddress "
    "oomScoreAdj clusterDomain clusterDNS streamingConnectionIdleTimeout nodeStatusUpdateFrequency "
    "nodeStatusReportFrequency nodeLeaseDurationSeconds imageMinimumGCAge imageMaximumGCAge "
    "imageGCHighThresholdPercent imageGCLowThresholdPercent volumeStatsAggPeriod kubeletCgroups systemCgroups "
    "cgroupRoot cgroupsPerQOS cgroupDriver cpuManagerPolicy singleProcessOOMKill cpuManagerPolicyOptions "
    "cpuManagerReconcilePeriod draManagerReconcilePeriod memoryManagerPolicy topologyManagerPolicy "
    "topologyManagerScope topologyManagerPolicyOptions qosReserved runtimeRequestTimeout hairpinMode maxPods "
    "podCIDR podPidsLimit resolvConf runOnce cpuCFSQuota cpuCFSQuotaPeriod nodeStatusMaxImages maxOpenFiles "
    "contentType kubeAPIQPS kubeAPIBurst serializeImagePulls maxParallelImagePulls evictionHard evictionSoft "
    "evictionSoftGracePeriod evictionPressureTransitionPeriod evictionMaxPodGracePeriod evictionMinimumReclaim "
    "mergeDefaultEvictionSettings podsPerCore enableControllerAttachDetach protectKernelDefaults "
    "makeIPTablesUtilChains iptablesMasqueradeBit iptablesDropBit featureGates failSwapOn containerLogMaxSize "
    "containerLogMaxFiles containerLogMaxWorkers containerLogMonitorInterval "
    "configMapAndSecretChangeDetectionStrategy systemReserved kubeReserved reservedSystemCPUs "
    "showHiddenMetricsForVersion systemReservedCgroup kubeReservedCgroup enforceNodeAllocatable "
    "allowedUnsafeSysctls volumePluginDir providerID kernelMemcgNotification logging enableSystemLogHandler "
    "enableSystemLogQuery shutdownGracePeriod shutdownGracePeriodCriticalPods shutdownGracePeriodByPodPriority "
    "crashLoopBackOff reservedMemory enableProfilingHandler enableDebugFlagsHandler seccompDefault "
    "memoryThrottlingFactor memoryReservationPolicy registerWithTaints registerNode tracing "
    "localStorageCapacityIsolation containerRuntimeEndpoint imageServiceEndpoint failCgroupV1 userNamespaces",
    memorySwap=fields("swapBehavior"),
)
# KubeletConfiguration fields nodeconf does not model that change what the kubelet writes or admits, with the
# values that leave it unchanged (v1beta1 defaults, types.go): any other value is named, since nodeconf's
# expectations would not hold for that node (issue 32: a field that changes the verdict is never dropped silently).
UNMODELLED_CONFIG: Mapping[str, tuple[Any, ...]] = {
    "cgroupRoot": ("", "/"),  # the root of every pod cgroup path
    "cgroupsPerQOS": (True,),  # false: no kubepods QoS tiers
    "memoryManagerPolicy": ("", "none", "None"),
    "qosReserved": ({},),  # memory.max on the burstable and besteffort tiers (QOSReserved)
    "podsPerCore": (0,),  # admits fewer pods than maxPods
    "evictionSoft": ({},),
    "reservedMemory": ([],),
}


def unknown_config_fields(doc: Any, source: str = "") -> list[InputError]:
    """One error per KubeletConfiguration field that is unknown, or known to change the node but not modelled."""
    if not isinstance(doc, Mapping):
        return []
    obj = "KubeletConfiguration"
    problems = [unknown_field_error(where, meant, source=source, obj=obj)
                for where, meant in unknown_fields(doc, CONFIG_FIELDS)]
    for name, unchanged in UNMODELLED_CONFIG.items():
        if name in doc and doc[name] is not None and doc[name] not in unchanged:
            problems.append(InputError(
                f"{shown(doc[name])} changes what the kubelet writes or admits, which nodeconf does not model: its "
                "expectations do not hold for this node", source=source, obj=obj, field=name))
    return problems
