"""Which dialect a name means, in-process: $SCION_DIALECTS_PATH, then the harness bundle, then the
packaged dialects; names that could escape a folder are refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO

from sciontool_py.dialect import discover, load
from sciontool_py.errors import DialectError

SHIPPED = [
    "agentino",
    "antigravity",
    "auggie",
    "claude",
    "codex",
    "copilot",
    "core-agent",
    "droid",
    "gemini",
    "grok-build",
    "hermes",
    "lhh",
    "mistral-vibe",
    "muse-code",
    "opencode",
    "qwen-code",
]


def dialect(folder: Path, declared: str, event: str = "tool-start") -> Path:
    """folder/dialect.yaml declaring `declared`, mapping raw `go` to `event`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "dialect.yaml"
    path.write_text(f"dialect: {declared}\nevent_name_field: e\nmappings:\n  go: {{event: {event}}}\n")
    return path


def harness(home: Path, declared: str, event: str = "notification") -> Path:
    return dialect(home / ".scion" / "harness", declared, event)


def test_a_source_checkout_finds_the_dialects_beside_the_package() -> None:
    assert load.packaged_dir() == str(REPO / "dialects")


def test_a_packaged_name_resolves_to_its_file(home: Path) -> None:
    spec = discover.find_dialect("core-agent")
    assert spec.name == "core-agent"
    assert spec.source == str(REPO / "dialects" / "core-agent" / "dialect.yaml")


def test_no_name_means_claude_as_in_scion(home: Path) -> None:
    assert discover.resolve(None, None).name == "claude"


def test_an_explicit_file_wins_over_a_name(home: Path, tmp_path: Path) -> None:
    path = dialect(tmp_path / "x", "anything")
    assert discover.resolve("core-agent", str(path)).name == "anything"


def test_the_search_path_comes_first_in_order(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = dialect(tmp_path / "a" / "core-agent", "core-agent", "agent-end")
    dialect(tmp_path / "b" / "core-agent", "core-agent", "model-end")
    dialect(tmp_path / "b" / "mine", "mine")
    harness(home, "core-agent")
    monkeypatch.setenv("SCION_DIALECTS_PATH", f"/nonexistent::{tmp_path / 'a'}:{tmp_path / 'b'}")
    spec = discover.find_dialect("core-agent")
    assert spec.source == str(first) and spec.mappings["go"].event == "agent-end"
    assert discover.find_dialect("mine").source == str(tmp_path / "b" / "mine" / "dialect.yaml")


def test_the_harness_bundle_replaces_the_packaged_dialect_it_declares(home: Path) -> None:
    path = harness(home, "core-agent")
    spec = discover.find_dialect("core-agent")
    assert spec.source == str(path) and spec.mappings["go"].event == "notification"
    assert discover.find_dialect("claude").source == str(REPO / "dialects" / "claude" / "dialect.yaml")


def test_a_harness_bundle_may_bring_a_new_name(home: Path) -> None:
    harness(home, "my-harness")
    assert discover.find_dialect("my-harness").name == "my-harness"


def test_a_file_that_declares_another_name_is_refused(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = dialect(tmp_path / "search" / "mine", "theirs")
    monkeypatch.setenv("SCION_DIALECTS_PATH", str(tmp_path / "search"))
    with pytest.raises(DialectError) as caught:
        discover.find_dialect("mine")
    assert str(caught.value) == f"{path}: declares dialect 'theirs' but 'mine' was requested"


@pytest.mark.parametrize("name", ["../etc", "Claude", "", ".hidden", "a/b", "-x"])
def test_a_name_that_could_be_a_path_is_refused(home: Path, name: str) -> None:
    with pytest.raises(DialectError) as caught:
        discover.find_dialect(name)
    assert str(caught.value) == f"invalid dialect name {name!r}: expected [a-z0-9][a-z0-9._-]*"


def test_an_unknown_name_lists_what_there_is(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dialect(tmp_path / "search" / "mine", "mine")
    monkeypatch.setenv("SCION_DIALECTS_PATH", str(tmp_path / "search"))
    with pytest.raises(DialectError) as caught:
        discover.find_dialect("nope")
    assert str(caught.value) == f"unknown dialect 'nope'; available: {', '.join(sorted([*SHIPPED, 'mine']))}"


def test_a_symlink_out_of_the_search_folder_is_refused(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = dialect(tmp_path / "outside" / "evil", "evil").parent
    search = tmp_path / "search"
    search.mkdir()
    (search / "evil").symlink_to(outside)
    monkeypatch.setenv("SCION_DIALECTS_PATH", str(search))
    with pytest.raises(DialectError) as caught:
        discover.find_dialect("evil")
    assert f"outside the search folder {search}" in str(caught.value)
    assert "evil" not in dict(discover.list_dialects())  # nor listed


def test_a_symlink_inside_the_search_folder_is_fine(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    search = tmp_path / "search"
    dialect(search / "real", "alias")
    (search / "alias").symlink_to(search / "real")
    monkeypatch.setenv("SCION_DIALECTS_PATH", str(search))
    assert discover.find_dialect("alias").name == "alias"


def test_the_list_is_in_lookup_order_first_of_a_name_only(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    search = tmp_path / "search"
    dialect(search / "zeta", "zeta")
    dialect(search / "claude", "claude")
    (search / "Not-Valid").mkdir()
    (search / "empty").mkdir()
    (search / "a-file").write_text("")
    bundle = harness(home, "core-agent")
    monkeypatch.setenv("SCION_DIALECTS_PATH", f"{search}:/nonexistent")
    assert discover.list_dialects() == [
        ("claude", str(search / "claude" / "dialect.yaml")),
        ("zeta", str(search / "zeta" / "dialect.yaml")),
        ("core-agent", str(bundle)),
        *[
            (n, str(REPO / "dialects" / n / "dialect.yaml"))
            for n in SHIPPED
            if n not in ("claude", "core-agent")
        ],
    ]


def test_a_broken_harness_bundle_is_left_out_of_the_list(home: Path) -> None:
    bundle = home / ".scion" / "harness" / "dialect.yaml"
    bundle.parent.mkdir(parents=True)
    bundle.write_text("dialect: [not a name\n")
    assert [name for name, _ in discover.list_dialects()] == SHIPPED
    with pytest.raises(DialectError):
        discover.find_dialect("core-agent")  # but a lookup that reaches it says what is wrong
