"""The spool's set-aside on a hostile HOME, in-process on real folders: whatever the agent put at
the set-aside folder's name or inside an entry, set_aside never raises, never writes through a
symlink, and leaves the spool without the entry whenever it can be removed at all."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sciontool_py.telemetry import spool

ENTRY = "00000000000000000001-1-00000000.json"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "spool"
    path.mkdir()
    return path


@pytest.fixture
def folder_fd(folder: Path) -> Iterator[int]:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    yield fd
    os.close(fd)


def test_a_file_at_the_set_aside_name_is_kept_and_the_entry_deleted(folder: Path, folder_fd: int) -> None:
    (folder / spool.SET_ASIDE).write_text("the agent's")
    (folder / ENTRY).mkdir()
    (folder / ENTRY / "inside").write_text("x")

    spool.set_aside(folder_fd, ENTRY)

    assert os.listdir(folder) == [spool.SET_ASIDE]
    assert (folder / spool.SET_ASIDE).read_text() == "the agent's"


def test_a_symlink_at_the_set_aside_name_is_never_followed(
    tmp_path: Path, folder: Path, folder_fd: int
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "kept").write_text("kept")
    (folder / spool.SET_ASIDE).symlink_to(elsewhere)
    (folder / ENTRY).symlink_to(elsewhere / "kept")  # the entry itself a link into the same place

    spool.set_aside(folder_fd, ENTRY)

    assert os.listdir(folder) == [spool.SET_ASIDE]
    assert os.readlink(folder / spool.SET_ASIDE) == str(elsewhere)
    assert os.listdir(elsewhere) == ["kept"] and (elsewhere / "kept").read_text() == "kept"


@pytest.mark.parametrize("entry_is_folder", [True, False])
def test_an_entry_whose_name_is_already_set_aside_as_a_folder_is_deleted(
    folder: Path, folder_fd: int, entry_is_folder: bool
) -> None:
    earlier = folder / spool.SET_ASIDE / ENTRY
    earlier.mkdir(parents=True)
    (earlier / "first").write_text("set aside before")
    entry = folder / ENTRY
    if entry_is_folder:  # a rename onto a non-empty folder fails
        entry.mkdir()
        (entry / "second").write_text("x")
    else:  # a file cannot replace a folder
        entry.write_text("x")

    spool.set_aside(folder_fd, ENTRY)

    assert os.listdir(folder) == [spool.SET_ASIDE]
    assert os.listdir(earlier) == ["first"]


def test_an_entry_that_vanished_meanwhile_is_no_error(folder: Path, folder_fd: int) -> None:
    spool.set_aside(folder_fd, ENTRY)  # a racing drainer took it first

    assert os.listdir(folder) == [spool.SET_ASIDE]
    assert os.listdir(folder / spool.SET_ASIDE) == []


def test_nesting_past_the_depth_bound_stays_and_the_rest_is_removed(folder: Path, folder_fd: int) -> None:
    (folder / spool.SET_ASIDE).write_text("")  # the entry must be deleted, not moved
    entry = folder / ENTRY
    deep = entry
    levels = []
    for level in range(1, 12):
        deep = deep / f"d{level}"
        levels.append(deep)
    deep.mkdir(parents=True)
    for level, path in enumerate(levels, start=1):
        (path / "file").write_text(str(level))
    (entry / "top").write_text("x")

    spool.set_aside(folder_fd, ENTRY)

    # The deletion looks into the entry and 7 folders below it, removing their files; the 8th
    # folder down is not looked into, so it stays, and so do the folders holding it.
    assert not (entry / "top").exists()
    assert [p for p in levels if (p / "file").exists()] == levels[7:]
    assert [p for p in levels if p.is_dir()] == levels


def test_a_vanished_entry_is_no_error_where_the_set_aside_name_is_taken_too(
    folder: Path, folder_fd: int
) -> None:
    (folder / spool.SET_ASIDE).write_text("the agent's")

    spool.set_aside(folder_fd, ENTRY)  # nothing to move and nothing to delete

    assert os.listdir(folder) == [spool.SET_ASIDE]


def test_trimming_skips_a_record_already_gone_and_sets_a_folder_aside(folder: Path, folder_fd: int) -> None:
    names = [f"{i:020d}-1-00000000.json" for i in range(spool.MAX_RECORDS + 3)]
    (folder / names[1]).mkdir()  # a folder where the second oldest record should be
    (folder / names[2]).write_text("{}")
    (folder / names[3]).write_text("{}")  # the oldest kept
    # names[0] is gone already: another drainer, or the agent, removed it.

    dropped, kept = spool.trim(folder_fd, names)

    assert (dropped, kept) == (names[:3], names[3:])
    assert sorted(os.listdir(folder)) == sorted([spool.SET_ASIDE, names[3]])
    assert os.listdir(folder / spool.SET_ASIDE) == [names[1]]
