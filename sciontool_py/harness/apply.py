"""Carry out (or, dry, show) a harness's edits and say what happened, one line per file."""

from __future__ import annotations

from sciontool_py.harness import record
from sciontool_py.harness.base import Edit
from sciontool_py.harness.files import missing_dirs, remove_empty_dirs, replace, unified_diff


def apply(edits: list[Edit], dry_run: bool, backup: bool = False) -> str:
    out: list[str] = []
    emptied: list[str] = []  # folders install created, to remove once every file in them went
    for edit in edits:
        if edit.before == edit.after:
            out.append(f"{edit.path}: {edit.summary}, unchanged\n")
        elif dry_run:
            out.append(unified_diff(edit.path, edit.before, edit.after))
        else:
            out.append(_carry_out(edit, backup, emptied))
    remove_empty_dirs(sorted(set(emptied), key=len))
    notes = dict.fromkeys(note for edit in edits for note in edit.notes)
    out.extend(f"note: {note}\n" for note in notes)
    return "".join(out)


def _carry_out(edit: Edit, backup: bool, emptied: list[str]) -> str:
    made = missing_dirs(edit.path) if edit.before is None else []
    # What this file's install created, read before the change (uninstall forgets it after).
    created = record.created(edit.path)
    kept = replace(edit.path, edit.before, edit.after, backup)
    if edit.installs:
        record.remember(edit.path, edit.before is None, made, edit.created_keys)
    elif edit.uninstalls:
        dirs = created.get("dirs")
        if edit.after is None and isinstance(dirs, list):
            emptied.extend(d for d in dirs if isinstance(d, str))
        record.forget(edit.path)
    where = f" (previous file kept as {kept})" if kept else " (new file)" if edit.before is None else ""
    return f"{edit.path}: {edit.summary}{where}\n"
