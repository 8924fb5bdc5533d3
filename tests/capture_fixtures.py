"""Fixtures from the real harnesses' captures in tests/data/real-envelopes/.

Run `python tests/capture_fixtures.py` after adding a capture: each distinct envelope (line) of
each session below becomes `fixtures/DIALECT/CAPTURE-SESSION-NN-RAW.json` (NN: its line number,
RAW: its raw event name), holding the line as decoded (key order kept) and, as `expect`, what
the shipped dialect makes of it now. Read every new expect before committing it. A fixture
that exists is left alone: a later dialect change must fail it (`sciontool dialect test`), and
`sciontool dialect test --update` rewrites it once the change is judged right. Identical lines
(opencode publishes plugin.added 45 times) make one fixture.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sciontool_py.dialect.spec import DialectSpec

REPO = Path(__file__).resolve().parent.parent
CAPTURES = REPO / "tests" / "data" / "real-envelopes"
# (capture folder, session file, dialect): every file of envelopes a harness sent to its hook.
SESSIONS = (
    ("claude-code-2.1.197", "bash.jsonl", "claude"),
    ("claude-code-2.1.197", "write.jsonl", "claude"),
    ("gemini-cli-0.61.0", "headless-tool-call.jsonl", "gemini"),
    ("codex-0.171.0", "exec-tool-call.jsonl", "codex"),
    ("opencode-1.18.33", "run-tool-call.plugin-envelopes.jsonl", "opencode"),
    ("copilot-1.0.102", "prompt-echo-hi.jsonl", "copilot"),
    ("qwen-code-0.24.4", "headless-echo-hi.jsonl", "qwen-code"),
    ("droid-0.225.2", "exec-echo-hi.jsonl", "droid"),
    ("mistral-vibe-3.0.2", "prompt-hello.jsonl", "mistral-vibe"),
    ("hermes-agent-0.19.0", "chat-q-hello.jsonl", "hermes"),
    ("auggie-0.36.0", "print-hello.jsonl", "auggie"),
)


def shipped(dialect: str) -> DialectSpec:
    from sciontool_py.dialect.load import load_dialect

    return load_dialect(str(REPO / "dialects" / dialect / "dialect.yaml"))


def lines(capture: str, session: str) -> list[str]:
    return (CAPTURES / capture / session).read_text(encoding="utf-8").splitlines()


def event_names(capture: str, session: str) -> list[str] | None:
    """The event each line was sent for, when the envelopes name none (Copilot passes it on
    the hook's command line): SESSION.events beside the capture, one name a line."""
    path = CAPTURES / capture / session.replace(".jsonl", ".events")
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else None


def fixture_paths(capture: str, session: str, dialect: str) -> dict[str, Path]:
    """Each distinct line of a session -> the fixture that holds it."""
    from sciontool_py import gojson
    from sciontool_py.dialect.normalize import raw_event_name

    spec = shipped(dialect)
    stem = session.removesuffix(".jsonl").removesuffix(".plugin-envelopes")
    names = event_names(capture, session)
    out: dict[str, Path] = {}
    for number, line in enumerate(lines(capture, session), 1):
        if line not in out:
            fallback = names[number - 1] if names else None
            raw = raw_event_name(spec, gojson.loads(line), fallback)  # type: ignore[arg-type]
            out[line] = REPO / "fixtures" / dialect / f"{capture}-{stem}-{number:02}-{raw}.json"
    return out


def main(argv: list[str]) -> int:
    from sciontool_py import gojson
    from sciontool_py.dialect.normalize import normalize

    force = argv == ["--force"]
    if argv and not force:
        print("usage: python tests/capture_fixtures.py [--force]", file=sys.stderr)
        return 2
    written = kept = 0
    for capture, session, dialect in SESSIONS:
        spec = shipped(dialect)
        names = event_names(capture, session)
        numbered = {line: n for n, line in reversed(list(enumerate(lines(capture, session))))}
        for line, path in fixture_paths(capture, session, dialect).items():
            if path.exists() and not force:
                kept += 1
                continue
            name = names[numbered[line]] if names else None
            event = normalize(spec, gojson.loads(line), fallback_name=name)  # numbers as Go reads them
            document: dict[str, object] = {"envelope": json.loads(line)}
            if name is not None:
                document["event"] = name
            document["expect"] = json.loads(event.to_json())
            path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"wrote {path.relative_to(REPO)}")
            written += 1
    print(f"{written} written, {kept} kept")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
