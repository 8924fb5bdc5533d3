"""Turns one scenario kept by `E2E_KEEP=1 make e2e` into a live session for the replay tests.

Usage: python e2e/vendor_session.py KEPT_SCENARIO_DIR tests/data/real-sessions/NAME

Writes NAME/envelopes.jsonl (what the harness handed the hook, in the order the calls started:
stdin, or the JSON argument of Codex's notify) and NAME/timeline.txt (seconds from the first
hook: each call with the state it left, the model requests, the scripted tools, the human's
prompts), with the run's temporary folder rewritten to /home/dev/out/NAME.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def envelope(record: dict[str, Any]) -> str:
    text = record["stdin"].strip()
    if not text and record["args"] and record["args"][-1].startswith("{"):
        text = record["args"][-1]
    return json.dumps(json.loads(text))


def said(info: dict[str, Any] | None) -> str:
    info = info or {}
    text = str(info.get("activity", "-")) + (f"/{info['toolName']}" if info.get("toolName") else "")
    return text + (f" phase={info['phase']}" if info.get("phase") else "")


def timeline(records: list[dict[str, Any]], truth: dict[str, Any], origin: float) -> list[str]:
    rows: list[tuple[float, str]] = []
    for record in records:
        name = json.loads(envelope(record))
        event = name.get("hook_event_name") or name.get("type") or "?"
        logged = " / ".join(line.split(" [sciontool] ", 1)[-1] for line in record["log"])
        rows.append((record["t0"], f"HOOK {event} -> {said(record['info'])} | {logged}"))
    spans = truth["truth"]
    for a, b in spans["flights"]:
        rows.append((a, f"MODEL request in flight until {b - origin:.2f}s"))
    for a, b in spans["tools"]:
        rows.append((a, f"TOOL running until {b - origin:.2f}s"))
    for a, b in spans["human"]:
        rows.append((a, f"HUMAN asked on screen, answered at {b - origin:.2f}s"))
    for t in spans.get("released", []):
        rows.append((t, "SCREEN the interrupted tool goes on in the background: no longer the agent's step"))
    for a, b in spans["alive"]:
        rows.append((b, f"EXIT harness process (launched at {a - origin:.2f}s)"))
    return [f"{t - origin:7.2f}s {text}" for t, text in sorted(rows)]


def main(kept: Path, out: Path) -> None:
    records = sorted(
        (json.loads(line) for line in (kept / "calls.jsonl").read_text().splitlines()),
        key=lambda r: r["t0"],
    )
    truth = json.loads((kept / "truth.json").read_text())
    root = str(kept)
    fake = f"/home/dev/out/{out.name}"
    out.mkdir(parents=True, exist_ok=True)
    lines = [envelope(r).replace(root, fake) for r in records]
    (out / "envelopes.jsonl").write_text("\n".join(lines) + "\n")
    origin = records[0]["t0"]
    (out / "timeline.txt").write_text("\n".join(timeline(records, truth, origin)).replace(root, fake) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
