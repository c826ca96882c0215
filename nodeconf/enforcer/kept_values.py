"""The Memory QoS values a kubelet restart leaves on running pods and the QoS levels: the agent's `configure` is a
kubelet restart, so the files semantics.memory_qos_restart keeps stay as the previous configuration wrote them until
a resize rewrites them or the pod goes (Source: that module; issue 30, upstream memory_qos_test.go "feature
rollback").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from nodeconf.semantics.expectation import CgroupExpectation, Expected, PodExpectation
from nodeconf.semantics.memory_qos_restart import CONTAINER, POD, kept_at_restart, kept_rule, rewritten_on_resize
from nodeconf.semantics.profile import Profile


class KeptValues:
    """What the agent enforced last on each cgroup, with its level, and the files a restart kept there."""

    def __init__(self) -> None:
        self.last: dict[str, tuple[str, CgroupExpectation]] = {}
        self.kept: dict[str, dict[str, Expected]] = {}

    def overlay(self, cgroup: CgroupExpectation, level: str) -> CgroupExpectation:
        """`cgroup` with the files kept on it; remembered as what is enforced there."""
        kept = self.kept.get(cgroup.path)
        enforced = replace(cgroup, files={**cgroup.files, **kept}) if kept else cgroup
        self.last[cgroup.path] = (level, enforced)
        return enforced

    def overlay_pod(self, pe: PodExpectation) -> PodExpectation:
        """A pod's expectation with the files kept on its cgroup, its containers' and its pause's."""
        if pe.cgroup is None:
            return pe
        containers = tuple(replace(c, cgroup=self.overlay(c.cgroup, CONTAINER)) for c in pe.containers)
        pause = replace(pe.pause, cgroup=self.overlay(pe.pause.cgroup, CONTAINER)) if pe.pause is not None else None
        return replace(pe, cgroup=self.overlay(pe.cgroup, POD), containers=containers, pause=pause)

    def restart(self, profile: Profile) -> None:
        """A kubelet of `profile` starts: keep what it does not rewrite (an earlier kept value stays the older one);
        a level it rewrites keeps nothing."""
        for path, (level, enforced) in self.last.items():
            files = kept_at_restart(level, profile)
            if not files:
                self.kept.pop(path, None)
                continue
            rule = kept_rule(level, profile)
            now = {name: Expected(enforced.files[name].value, rule) for name in files & set(enforced.files)}
            if now:
                self.kept[path] = {**now, **self.kept.get(path, {})}

    def resized(self, pod_path: str, profile: Profile) -> None:
        """A resize of the pod in `pod_path` applied by a kubelet of `profile`: the files it rewrites are kept no
        more, on the pod's cgroup and its containers'."""
        for path in [p for p in self.kept if p == pod_path or p.startswith(pod_path + "/")]:
            level = self.last[path][0] if path in self.last else CONTAINER
            for name in rewritten_on_resize(level, profile):
                self.kept[path].pop(name, None)
            if not self.kept[path]:
                del self.kept[path]

    def forget(self, path: str) -> None:
        """Forget the cgroup and everything below it (a pod torn down)."""
        for cache in (self.last, self.kept):
            for p in [p for p in cache if p == path or p.startswith(path + "/")]:
                del cache[p]

    def clear(self) -> None:
        self.last.clear()
        self.kept.clear()

    def to_state(self) -> dict[str, Any]:
        return {"kept": {path: {f: [e.value, e.rule] for f, e in files.items()} for path, files in self.kept.items()},
                "levels": {path: level for path, (level, _) in self.last.items()}}

    def restore(self, doc: Mapping[str, Any] | None) -> None:
        """The kept files of a state file (an agent restart is not a kubelet restart: nothing more is kept)."""
        self.clear()
        if not doc:
            return
        self.kept = {path: {f: Expected(v[0], v[1]) for f, v in files.items()} for path, files in doc["kept"].items()}
        self.last = {path: (level, CgroupExpectation(path, {})) for path, level in doc["levels"].items()}
