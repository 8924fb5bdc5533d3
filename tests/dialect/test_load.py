"""Loading a dialect.yaml in-process: the compiled cache (where it lives, when it is trusted, how it
recovers) and the files that are refused before any YAML is parsed."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from sciontool_py.dialect import load
from sciontool_py.errors import DialectError

TEXT = "dialect: cached\nevent_name_field: e\nmappings:\n  go: {event: tool-start}\n"


@pytest.fixture
def dialect_file(home: Path, tmp_path: Path) -> Path:
    path = tmp_path / "cached" / "dialect.yaml"
    path.parent.mkdir()
    path.write_text(TEXT)
    return path


def cache_entries(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache").glob("*.json"))


def rewrite_keeping_mtime(path: Path, text: str) -> None:
    stat = path.stat()
    path.write_text(text)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_the_cache_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SCIONTOOL_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert load.cache_dir() == str(tmp_path / ".cache" / "sciontool-py")
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert load.cache_dir() == "/xdg/sciontool-py"
    monkeypatch.setenv("SCIONTOOL_CACHE_DIR", "/explicit")
    assert load.cache_dir() == "/explicit"


def test_a_load_stores_one_compiled_entry_per_file(dialect_file: Path, tmp_path: Path) -> None:
    spec = load.load_dialect(str(dialect_file))
    assert (spec.name, spec.mappings["go"].event, spec.source) == ("cached", "tool-start", str(dialect_file))
    [entry] = cache_entries(tmp_path)
    assert json.loads(entry.read_text())["spec"] == spec.to_json()
    load.load_dialect(str(dialect_file))
    assert cache_entries(tmp_path) == [entry]


def test_a_fresh_entry_is_used_without_reading_the_yaml(dialect_file: Path, tmp_path: Path) -> None:
    load.load_dialect(str(dialect_file))
    [entry] = cache_entries(tmp_path)
    stored = json.loads(entry.read_text())
    stored["spec"]["mappings"]["go"]["event"] = "agent-end"  # only the cache could say this
    entry.write_text(json.dumps(stored))
    assert load.load_dialect(str(dialect_file)).mappings["go"].event == "agent-end"


def test_an_edit_with_a_new_mtime_is_seen(dialect_file: Path) -> None:
    load.load_dialect(str(dialect_file))
    stat = dialect_file.stat()
    dialect_file.write_text(TEXT.replace("tool-start", "tool-end  "))  # same size
    os.utime(dialect_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert load.load_dialect(str(dialect_file)).mappings["go"].event == "tool-end"


def test_an_edit_with_the_same_mtime_but_a_new_size_is_seen(dialect_file: Path) -> None:
    load.load_dialect(str(dialect_file))
    rewrite_keeping_mtime(dialect_file, TEXT.replace("tool-start", "notification"))
    assert load.load_dialect(str(dialect_file)).mappings["go"].event == "notification"


def test_a_file_replaced_by_another_is_seen(dialect_file: Path, tmp_path: Path) -> None:
    load.load_dialect(str(dialect_file))
    replacement = tmp_path / "new.yaml"
    replacement.write_text(TEXT.replace("tool-start", "tool-end  "))
    stat = dialect_file.stat()
    os.utime(replacement, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(replacement, dialect_file)  # same path, size and mtime; a new inode
    assert load.load_dialect(str(dialect_file)).mappings["go"].event == "tool-end"


@pytest.mark.parametrize("damage", ["{garbage", "[]", '{"key": 1}', '{"spec": {}}', ""])
def test_a_damaged_entry_is_ignored_and_rebuilt(dialect_file: Path, tmp_path: Path, damage: str) -> None:
    load.load_dialect(str(dialect_file))
    [entry] = cache_entries(tmp_path)
    good = entry.read_text()
    entry.write_text(damage)
    assert load.load_dialect(str(dialect_file)).name == "cached"
    assert entry.read_text() == good


def test_an_entry_of_another_format_version_is_rebuilt(dialect_file: Path, tmp_path: Path) -> None:
    load.load_dialect(str(dialect_file))
    [entry] = cache_entries(tmp_path)
    stored = json.loads(entry.read_text())
    stored["spec"]["format"] = 0
    stored["spec"]["dialect"] = "stale"
    entry.write_text(json.dumps(stored))
    assert load.load_dialect(str(dialect_file)).name == "cached"


def test_an_unwritable_cache_only_costs_speed(
    dialect_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "blocker").write_text("")
    monkeypatch.setenv("SCIONTOOL_CACHE_DIR", str(tmp_path / "blocker" / "sub"))
    assert load.load_dialect(str(dialect_file)).name == "cached"
    assert load.load_dialect(str(dialect_file)).name == "cached"


def test_a_relative_path_is_cached_as_the_absolute_one(
    dialect_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(dialect_file.parent)
    assert load.load_dialect("dialect.yaml").source == str(dialect_file)
    load.load_dialect(str(dialect_file))
    assert len(cache_entries(tmp_path)) == 1


def test_a_missing_file_is_one_clear_error(home: Path, tmp_path: Path) -> None:
    with pytest.raises(DialectError) as caught:
        load.load_dialect(str(tmp_path / "nope.yaml"))
    assert str(caught.value) == f"{tmp_path / 'nope.yaml'}: cannot read dialect: No such file or directory"


def test_a_fifo_is_refused_without_waiting_for_a_writer(home: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "dialect.yaml"
    os.mkfifo(fifo)
    outcome: list[str] = []
    # In a thread, so a regression hangs that thread and fails the join, not the whole run.
    thread = threading.Thread(
        target=lambda: outcome.append(_error(load.load_dialect, str(fifo))), daemon=True
    )
    thread.start()
    thread.join(timeout=10)
    assert outcome == [f"{fifo}: cannot read dialect: not a regular file"]


def _error(call: object, *args: str) -> str:
    try:
        call(*args)  # type: ignore[operator]
    except DialectError as exc:
        return str(exc)
    return "no error"


def test_a_folder_is_refused(home: Path, tmp_path: Path) -> None:
    assert _error(load.load_dialect, str(tmp_path)) == f"{tmp_path}: cannot read dialect: not a regular file"


def test_a_file_over_a_mebibyte_is_refused(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text(TEXT + "#" * (1 << 20))
    assert _error(load.load_dialect, str(path)) == f"{path}: dialect file is larger than 1048576 bytes"


def test_a_file_that_is_not_utf8_is_refused(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(TEXT.encode() + b"# caf\xe9\n")
    assert _error(load.load_dialect, str(path)) == f"{path}: dialect file is not UTF-8"


def test_an_invalid_dialect_names_its_first_problem_and_counts_the_rest(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("dialect: mine\nevent_name_field: e\nmapings: {}\nresponses: 3\n")
    message = _error(load.load_dialect, str(path))
    assert message.startswith(f"{path}:3:1: ")
    assert message.endswith(" (and 1 more problems)")
    # The refusal is remembered, so the next load repeats it without validating again.
    [entry] = (tmp_path / "cache").glob("*.json")
    assert json.loads(entry.read_text())["error"] == message
    assert _error(load.load_dialect, str(path)) == message


def test_compile_skips_the_cache(dialect_file: Path, tmp_path: Path) -> None:
    assert load.compile_dialect(str(dialect_file)).name == "cached"
    assert cache_entries(tmp_path) == []


def test_every_shipped_compiled_form_is_what_its_dialect_yaml_compiles_to(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A packaged dialect.yaml edited without `python -m sciontool_py.dialect.load` ships a stale
    # compiled.json: regenerating into a copy must give every shipped file back byte for byte.
    import shutil

    shipped = Path(load.packaged_dir())
    copy = tmp_path / "dialects"
    shutil.copytree(shipped, copy, ignore=shutil.ignore_patterns(load.COMPILED_NAME))
    monkeypatch.setattr(load, "packaged_dir", lambda: str(copy))
    written = load.write_packaged_forms()
    names = sorted(Path(p).parent.name for p in written)
    assert names == sorted(p.parent.name for p in shipped.glob(f"*/{load.COMPILED_NAME}"))
    assert len(names) >= 16
    for path in written:
        got = Path(path).read_bytes()
        assert got == (shipped / Path(path).parent.name / load.COMPILED_NAME).read_bytes(), path
