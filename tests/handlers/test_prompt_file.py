"""prompt.md in-process: the agent's first prompt, saved once, exactly as sent."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import event

from sciontool_py.receiver.handlers.prompt_file import save_first_prompt


@pytest.mark.parametrize("name", ["prompt-submit", "agent-start"])
def test_the_first_prompt_is_saved_whole(home: Path, name: str) -> None:
    prompt = "fix the bug\nin **main.py** " + "é" * 200
    save_first_prompt(str(home), event(name, prompt=prompt))
    assert (home / "prompt.md").read_text(encoding="utf-8") == prompt


def test_later_prompts_never_replace_it(home: Path) -> None:
    save_first_prompt(str(home), event("prompt-submit", prompt="first"))
    save_first_prompt(str(home), event("agent-start", prompt="second"))
    assert (home / "prompt.md").read_text() == "first"


def test_an_empty_prompt_md_counts_as_none(home: Path) -> None:
    (home / "prompt.md").write_text("")
    save_first_prompt(str(home), event("prompt-submit", prompt="first"))
    assert (home / "prompt.md").read_text() == "first"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("prompt-submit", {}),
        ("prompt-submit", {"prompt": ""}),
        ("prompt-submit", {"prompt": 42.0}),
        ("model-start", {"prompt": "not a user prompt"}),
        ("notification", {"message": "hi"}),
    ],
)
def test_nothing_is_written_without_a_prompt(home: Path, name: str, data: dict[str, object]) -> None:
    save_first_prompt(str(home), event(name, **data))
    assert list(home.iterdir()) == []


def test_a_lone_surrogate_is_kept_as_its_bytes(home: Path) -> None:
    save_first_prompt(str(home), event("prompt-submit", prompt="a\ud800b"))
    assert (home / "prompt.md").read_bytes() == b"a\xed\xa0\x80b"


def test_an_unwritable_prompt_md_raises_for_the_hook_to_report(home: Path) -> None:
    (home / "prompt.md").mkdir()  # the rename onto a folder fails
    with pytest.raises(OSError):
        save_first_prompt(str(home), event("prompt-submit", prompt="p"))


def test_a_symlink_at_prompt_md_is_replaced_never_written_through(home: Path) -> None:
    (home / "prompt.md").symlink_to(home / "missing" / "prompt.md")
    save_first_prompt(str(home), event("prompt-submit", prompt="p"))
    assert (home / "prompt.md").read_text() == "p" and not (home / "prompt.md").is_symlink()
