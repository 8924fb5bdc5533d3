"""Carry out (or, dry, show) a harness's edits and say what happened, one line per file."""

from __future__ import annotations

from sciontool_py.harness import record
from sciontool_py.harness.base import Edit, Harness, Scope
from sciontool_py.harness.files import missing_dirs, replace, unified_diff


def run(harness: Harness, scope: Scope, install: bool, dry_run: bool, backup: bool = False) -> str:
    """Install or uninstall: read the record, work out the edits, carry them out and record them,
    all under the record's lock, so a concurrent command sees the files and the record agree."""
    with record.locked():
        book = record.load()  # a damaged record refuses before anything is read or changed
        edits = harness.install(scope) if install else harness.uninstall(scope)
        root = harness.target(scope)[0] if edits else ""
        return apply(edits, dry_run, backup, book, root)


def apply(edits: list[Edit], dry_run: bool, backup: bool, book: record.Record, root: str) -> str:
    out: list[str] = []
    for edit in edits:
        if edit.before == edit.after:
            out.append(f"{edit.path}: {edit.summary}, unchanged\n")
        elif dry_run:
            out.append(unified_diff(edit.path, edit.before, edit.after))
        else:
            out.append(_carry_out(edit, backup, book, root))
    notes = dict.fromkeys(note for edit in edits for note in edit.notes)
    out.extend(f"note: {note}\n" for note in notes)
    return "".join(out)


def _carry_out(edit: Edit, backup: bool, book: record.Record, root: str) -> str:
    made = missing_dirs(edit.path) if edit.before is None else []
    kept = replace(edit.path, edit.before, edit.after, backup)
    # Recorded file by file: a failure on a later file leaves the record true of this one.
    if edit.installs:
        book.remember(edit.path, edit.before is None, made, edit.created_keys)
        record.save(book)
    elif edit.uninstalls:
        book.forget(edit.path, root)
        record.save(book)
    where = f" (previous file kept as {kept})" if kept else " (new file)" if edit.before is None else ""
    return f"{edit.path}: {edit.summary}{where}\n"
