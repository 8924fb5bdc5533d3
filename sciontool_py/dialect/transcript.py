"""Assistant text from a Claude-style JSONL transcript (best effort, never an error)."""

from __future__ import annotations

import json

_MAX_LINE = 16 << 20  # Scion's scanner buffer: longer lines are skipped


def last_assistant_text(path: str) -> str:
    """Text blocks of the trailing run of assistant entries, joined and trimmed."""
    blocks: list[str] = []
    try:
        with open(path, "rb") as handle:
            for line in handle:
                if len(line) > _MAX_LINE or not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(entry, dict):
                    continue
                message = entry.get("message")
                message = message if isinstance(message, dict) else {}
                role = entry.get("type") or message.get("role")
                if role == "user":
                    blocks = []
                elif role == "assistant":
                    blocks.extend(_text_blocks(message.get("content")))
    except OSError:
        return ""
    return "".join(blocks).strip()


def _text_blocks(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        block["text"]
        for block in content
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    ]
