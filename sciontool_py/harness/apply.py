"""Carry out (or, dry, show) a harness's edits and say what happened, one line per file."""

from __future__ import annotations

from sciontool_py.harness.base import Edit
from sciontool_py.harness.files import replace, unified_diff


def apply(edits: list[Edit], dry_run: bool) -> str:
    out: list[str] = []
    for edit in edits:
        if edit.before == edit.after:
            out.append(f"{edit.path}: {edit.summary}, unchanged\n")
        elif dry_run:
            out.append(unified_diff(edit.path, edit.before, edit.after))
        else:
            backup = replace(edit.path, edit.before, edit.after)
            kept = f" (previous file kept as {backup})" if backup else " (new file)"
            out.append(f"{edit.path}: {edit.summary}{kept}\n")
    notes = dict.fromkeys(note for edit in edits for note in edit.notes)
    out.extend(f"note: {note}\n" for note in notes)
    return "".join(out)
