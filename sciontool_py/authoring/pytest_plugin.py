"""pytest plugin: every dialect fixture as its own test item.

Off unless asked: ``pytest --sciontool-fixtures DIR`` (or the ini option
``sciontool_fixtures``).  Registered through the ``pytest11`` entry point, so
every pytest run in an environment with sciontool-py imports this module:
it imports nothing of the package until a fixture is collected.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr, TracebackStyle

    from sciontool_py.authoring.contract import DialectChooser

_DIRS = pytest.StashKey[list[Path]]()
_CHOOSER = pytest.StashKey["DialectChooser"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sciontool", "dialect fixtures (sciontool-py)")
    group.addoption(
        "--sciontool-fixtures",
        action="append",
        default=[],
        metavar="DIR",
        help="Collect every fixture (*.json) under DIR as a test item.",
    )
    group.addoption("--sciontool-dialect", metavar="NAME", help="Test every fixture against this dialect.")
    group.addoption(
        "--sciontool-dialect-file", metavar="PATH", help="Test every fixture against this dialect.yaml."
    )
    parser.addini("sciontool_fixtures", "Fixture folders to collect as test items.", type="paths", default=[])
    parser.addini("sciontool_dialect", "Dialect every fixture is tested against.", default="")
    parser.addini("sciontool_dialect_file", "dialect.yaml every fixture is tested against.", default="")


def pytest_configure(config: pytest.Config) -> None:
    given = [Path(d).resolve() for d in config.getoption("sciontool_fixtures")]
    from_ini = [Path(d).resolve() for d in config.getini("sciontool_fixtures")]
    config.stash[_DIRS] = given or from_ini
    if not config.stash[_DIRS]:
        return
    for folder in config.stash[_DIRS]:
        if not folder.is_dir():
            origin = "--sciontool-fixtures" if given else "the sciontool_fixtures ini option"
            raise pytest.UsageError(f"sciontool: {origin}: {folder}: no such folder")
    config.stash[_CHOOSER] = _chooser(config)
    # Fixture folders are collected like test folders: from the command line
    # always, from the ini file only when no paths were named (as testpaths).
    extra = given or (from_ini if config.args_source != pytest.Config.ArgsSource.ARGS else [])
    args = [Path(a.split("::")[0]).resolve() for a in config.args]
    for folder in extra:
        if not any(folder == a or a in folder.parents for a in args):
            config.args.append(str(folder))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    dirs = parent.config.stash.get(_DIRS, [])
    if not dirs or not any(d == file_path.parent or d in file_path.parents for d in dirs):
        return None
    from sciontool_py.authoring.contract import is_fixture_name

    if not is_fixture_name(file_path.name):
        return None
    return FixtureFile.from_parent(parent, path=file_path)


def _chooser(config: pytest.Config) -> DialectChooser:
    """The dialect rule for this run; a bad forced dialect is a usage error."""
    from sciontool_py.authoring.contract import DialectChooser
    from sciontool_py.errors import SciontoolError

    dialect = config.getoption("sciontool_dialect") or config.getini("sciontool_dialect") or None
    dialect_file = config.getoption("sciontool_dialect_file")
    if not dialect_file and config.getini("sciontool_dialect_file"):
        # Like the paths ini type: relative to the ini file's folder.
        base = config.inipath.parent if config.inipath else config.rootpath
        dialect_file = str(base / config.getini("sciontool_dialect_file"))
    try:
        return DialectChooser(dialect, dialect_file)
    except SciontoolError as exc:
        how = (
            " (a dialect NAME is looked up in each folder of SCION_DIALECTS_PATH as NAME/dialect.yaml,"
            " then $HOME/.scion/harness/dialect.yaml, then the dialects shipped with sciontool-py;"
            " --sciontool-dialect-file PATH takes a dialect.yaml directly)"
            if dialect and not dialect_file
            else ""
        )
        raise pytest.UsageError(f"sciontool: {exc}{how}") from None


class FixtureFile(pytest.File):
    def collect(self) -> list[FixtureItem]:
        return [FixtureItem.from_parent(self, name=self.path.stem)]


class FixtureItem(pytest.Item):
    def runtest(self) -> None:
        from sciontool_py.authoring.contract import check_fixture
        from sciontool_py.errors import FixtureMismatch

        problems = check_fixture(self.config.stash[_CHOOSER], str(self.path))
        if problems:
            raise FixtureMismatch("\n".join(problems))

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None
    ) -> str | TerminalRepr:
        from sciontool_py.errors import FixtureMismatch

        if isinstance(excinfo.value, FixtureMismatch):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"fixture {self.name}"
