"""Vendors one kept e2e scenario (E2E_KEEP=1) as a live session for the replay tests.

Usage: python e2e/vendor.py KEPT/HARNESS/SCENARIO NAME
Writes tests/data/real-sessions/NAME/envelopes.jsonl (what the harness piped to the hook, one
object a line, in arrival order: by the time each hook call started) and timeline.txt (seconds
from the scenario's start: each hook call with the status it left, and the ground truth the
ratio was judged on: model requests, scripted tools, the human awaited, windows). Paths under
the run's temp folder become /home/dev/runs/NAME.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from agents import raw_name

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "real-sessions"


def status(info: dict[str, Any] | None) -> str:
    info = info or {}
    text = str(info.get("activity", "-"))
    if info.get("toolName"):
        text += f"/{info['toolName']}"
    return f"{text} {info.get('phase', '')}".strip()


def envelope(record: dict[str, Any]) -> str:
    """What the harness handed the hook: stdin, or the JSON argument of Codex's notify."""
    text = record["stdin"].strip()
    if not text and record["args"] and record["args"][-1].startswith("{"):
        text = record["args"][-1]
    return text


def main(kept: Path, name: str) -> None:
    calls = [json.loads(line) for line in (kept / "calls.jsonl").read_text().splitlines()]
    calls.sort(key=lambda r: r["t0"])
    data = json.loads((kept / "truth.json").read_text())
    origin = data["began"]
    here = str(kept.resolve())
    mangled = re.sub(r"[^A-Za-z0-9]", "-", here)  # Claude Code's projects/ folder of that path

    def clean(text: str) -> str:
        text = text.replace(here, f"/home/dev/runs/{name}")
        return text.replace(mangled, f"-home-dev-runs-{name}")

    out = OUT / name
    out.mkdir(parents=True, exist_ok=True)
    envelopes = [json.dumps(json.loads(clean(envelope(r)))) for r in calls]
    (out / "envelopes.jsonl").write_text("\n".join(envelopes) + "\n")
    lines = []
    for r in calls:
        said = status(r["info"])
        lines.append(f"{r['t0'] - origin:7.2f}-{r['t1'] - origin:6.2f} hook {raw_name(r):18} -> {said}")
    for kind in ("alive", "flights", "tools", "human"):
        for a, b in data["truth"][kind]:
            lines.append(f"{a - origin:7.2f}-{b - origin:6.2f} {kind}")
    for t in data["truth"].get("released", []):
        lines.append(
            f"{t - origin:7.2f}-{t - origin:6.2f} released: the interrupted tool goes on in the background"
        )
    for a, b, why in data["truth"]["windows"]:
        lines.append(f"{a - origin:7.2f}-{b - origin:6.2f} window: {why}")
    lines.sort(key=lambda line: float(line.split("-", 1)[0]))
    header = f"# {name}: seconds from the scenario's start (make e2e, {kept.parent.name} {kept.name})\n"
    (out / "timeline.txt").write_text(header + "\n".join(lines) + "\n")
    print(f"{out}: {len(envelopes)} envelopes")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
