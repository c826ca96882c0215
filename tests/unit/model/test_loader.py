"""Loading manifest files: multi-document YAML, List objects, and errors that name the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeconf.errors import InputError
from nodeconf.loader import load_kubelet_config, load_objects, objects_from_text
from nodeconf.manifest import LimitRange, Pod, ResourceQuota

WORKLOADS = Path(__file__).resolve().parents[3] / "workloads" / "requests-limits"
POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec: {containers: [{name: c, image: x}]}\n"


def test_multi_document_file_keeps_order_and_skips_empty_documents(tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    path.write_text("---\n" + POD % "a" + "---\n---\n" + POD % "b")
    assert [o.name for o in load_objects([path])] == ["a", "b"]


def test_list_objects_are_expanded() -> None:
    text = "kind: List\nitems:\n- {kind: Pod, metadata: {name: x}, spec: {containers: [{name: c}]}}\n" \
           "- {kind: PodList, items: [{kind: Pod, metadata: {name: y}, spec: {containers: [{name: c}]}}]}\n"
    assert [o.name for o in objects_from_text(text, "l.yaml")] == ["x", "y"]


def test_article_manifests_load() -> None:
    objects = load_objects(sorted(WORKLOADS.glob("*.yaml")))
    kinds = {type(o) for o in objects}
    assert kinds == {Pod, LimitRange, ResourceQuota}
    names = {o.name for o in objects}
    assert {"res-demo", "burner", "eater", "plain", "huge", "tiny", "big", "defaults", "budget"} <= names


def test_kubelet_config_file() -> None:
    config = load_kubelet_config(WORKLOADS / "kubelet-config" / "reserved.yaml")
    assert config.system_reserved["memory"].value() == 512 * 2**20
    assert config.eviction_hard is not None and config.eviction_hard["memory.available"] == "200Mi"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("kind: Pod\nmetadata: {name: [unclosed\n", "invalid YAML: line", id="yaml-syntax"),
        pytest.param("just a string\n", "not a Kubernetes object", id="scalar-document"),
        pytest.param("kind: Service\nmetadata: {name: s}\n", "unknown kind 'Service'", id="unknown-kind"),
        pytest.param("# nothing\n", "no Kubernetes objects", id="empty-file"),
        pytest.param("kind: List\nitems: 3\n", "List: items: expected a list", id="list-items-not-list"),
    ],
)
def test_bad_manifest_files_name_the_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(InputError) as err:
        load_objects([path])
    named = str(err.value).split(": ")[0]
    assert named == str(path) or (named.startswith(str(path)[:26]) and named.endswith("/bad.yaml")), named
    assert message in str(err.value)


def test_a_long_path_keeps_its_file_name_in_the_message(tmp_path: Path) -> None:
    path = tmp_path.joinpath(*["deep" * 10] * 4, "bad.yaml")
    path.parent.mkdir(parents=True)
    path.write_text("# nothing\n")
    with pytest.raises(InputError, match=r"^/.{20,30}\.\.\..*/bad\.yaml: no Kubernetes objects in file$"):
        load_objects([path])


@pytest.mark.parametrize(
    ("name", "message"), [("missing.yaml", "no such file"), (".", "is a directory")], ids=["missing", "directory"]
)
def test_unreadable_paths(tmp_path: Path, name: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        load_objects([tmp_path / name])


def test_kubelet_config_with_two_documents_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "k.yaml"
    path.write_text("kind: KubeletConfiguration\n---\nkind: KubeletConfiguration\n")
    with pytest.raises(InputError, match="found 2"):
        load_kubelet_config(path)
