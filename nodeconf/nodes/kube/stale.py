"""What `nodeconf clean --node kube:CONTEXT` may delete: the namespaces of runs that are over (killed), and nothing
else — never a pod by itself, never a namespace that is not a run's, never a live run's.

A namespace is a run's when its name is `nodeconf-RUN` or `nodeconf-RUN-NS` (RUN: the six hex digits of a run id,
kube/node.py), its labels carry nodeconf's managed-by label and the same RUN, and it has the run's lease annotation
(kube/lease.py). A run is over when the lease of every one of its namespaces lapsed on the API server's clock: a
live run renews it every minute. The namespace `nodeconf` of nodeconf/infra/kube/rbac.yaml (its ServiceAccount, an
in-cluster runner) matches no run name; a pod of any other namespace is never looked at. A run of an older
nodeconf (no lease) is kept, with the command to remove it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nodeconf.nodes.kube.api import ClientKubeApi, KubeApi, KubeApiError, dig, load_kube_context
from nodeconf.nodes.kube.lease import TIME_FORMAT, expires_at
from nodeconf.nodes.kube.pods import MANAGED_BY, RUN_LABEL
from nodeconf.nodes.shield import signals_deferred

RUN_NAMESPACE = re.compile(r"nodeconf-(?P<run>[0-9a-f]{6})(?:-[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)?")
SELECTOR = f"{MANAGED_BY[0]}={MANAGED_BY[1]},{RUN_LABEL}"


@dataclass(frozen=True)
class Verdict:
    """One labelled namespace: whether clean deletes it, and why."""

    namespace: str
    delete: bool
    why: str


def run_of(namespace: Mapping[str, Any]) -> str | None:
    """The run id a namespace proves it belongs to (name and labels agree), None for any other namespace."""
    match = RUN_NAMESPACE.fullmatch(str(dig(namespace, "metadata", "name") or ""))
    labels = dig(namespace, "metadata", "labels") or {}
    if match is None or labels.get(MANAGED_BY[0]) != MANAGED_BY[1] or labels.get(RUN_LABEL) != match["run"]:
        return None
    return match["run"]


def judge(namespaces: Sequence[Mapping[str, Any]], now: datetime) -> list[Verdict]:
    """Which of the namespaces are a finished run's (delete) and which stay, each with its reason."""
    verdicts: list[Verdict] = []
    runs: dict[str, list[tuple[str, datetime]]] = {}
    for namespace in namespaces:
        name = str(dig(namespace, "metadata", "name"))
        run, expires = run_of(namespace), expires_at(namespace)
        if run is None:
            verdicts.append(Verdict(name, False, "not a nodeconf run's namespace (name and labels of a run "
                                                 "nodeconf-RUN[-NS] do not agree): kept"))
        elif dig(namespace, "metadata", "deletionTimestamp"):  # deleting it again is a 409 Conflict
            verdicts.append(Verdict(name, False, f"run {run}'s namespace is being deleted already"))
        elif expires is None:
            verdicts.append(Verdict(name, False, f"run {run} has no lease (an older nodeconf's run): kept; delete it "
                                                 f"with `kubectl delete namespace {name}` when no run uses it"))
        else:
            runs.setdefault(run, []).append((name, expires))
    for run, members in runs.items():
        until = max(expires for _, expires in members).strftime(TIME_FORMAT)
        over = all(expires <= now for _, expires in members)
        why = (f"run {run} is over (its lease lapsed at {until})" if over
               else f"run {run} is alive (its lease runs until {until}): kept")
        verdicts += [Verdict(name, over, why) for name, _ in members]
    return verdicts


def clean_namespaces(api: KubeApi, dry_run: bool) -> list[Verdict]:
    """Delete the namespaces of finished runs (with everything in them); every labelled namespace's verdict."""
    verdicts = judge(api.list_namespaces(SELECTOR), api.now())
    if not dry_run:
        with signals_deferred("the namespaces of finished runs are deleted"):
            for verdict in verdicts:
                if verdict.delete:
                    try:
                        api.delete_namespace(verdict.namespace)
                    except KubeApiError as err:
                        if err.status != 404:  # gone meanwhile
                            raise
    return verdicts


def clean_cluster(context: str | None, dry_run: bool) -> tuple[str, list[Verdict]]:
    """Clean the cluster of the kubeconfig context (the current one when None): its name and the verdicts."""
    api_client, chosen = load_kube_context(context)
    api = ClientKubeApi(api_client)
    try:
        return chosen, clean_namespaces(api, dry_run)
    finally:
        api.close()
