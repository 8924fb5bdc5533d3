"""The file edits under `sciontool harness`, in process: JSON spans and Codex's notify line."""

from __future__ import annotations

import json
import re

import pytest

from sciontool_py.errors import SciontoolError
from sciontool_py.harness import tomledit
from sciontool_py.harness.hookjson import HookSet
from sciontool_py.harness.jsonedit import Document

COMMAND = "sciontool hook --dialect=claude"
HOOKS = HookSet(
    {
        "PreToolUse": {"matcher": "*", "hooks": [{"type": "command", "command": COMMAND}]},
        "Stop": {"hooks": [{"type": "command", "command": COMMAND}]},
    },
    {"PreToolUse": COMMAND, "Stop": COMMAND},
)

DOCUMENTS = {
    "two spaces": '{\n  "model": "opus",\n  "hooks": {\n    "Stop": [\n      {"hooks": []}\n    ]\n  }\n}\n',
    "tabs": '{\n\t"env": {\n\t\t"A": "1"\n\t}\n}\n',
    "crlf": '{\r\n  "a": [1, 2],\r\n  "b": "x"\r\n}\r\n',
    "one line": '{"permissions": {"allow": ["Bash"]}, "hooks": {"Stop": [{"hooks": [{"command": "say"}]}]}}',
    "empty": "{}",
    "empty hooks": '{\n  "hooks": {}\n}\n',
    "tricky strings": '{\n  "s": "a } ] \\" , {",\n  "k\\"ey": ["[", "]"],\n  "u": "ü\\u00fc"\n}\n',
    "no newline at end": '{\n    "a": 1\n}',
}


@pytest.mark.parametrize("name", [n for n in DOCUMENTS if n != "empty hooks"])
def test_add_then_remove_gives_back_the_same_bytes(name: str) -> None:
    text = DOCUMENTS[name]
    doc = Document(text, "settings.json")
    before = json.loads(text)
    changed, created = HOOKS.add(doc)
    assert changed == ["PreToolUse", "Stop"]
    added = json.loads(doc.text)
    assert {k: v for k, v in added.items() if k != "hooks"} == {
        k: v for k, v in before.items() if k != "hooks"
    }
    assert added["hooks"]["PreToolUse"][-1] == HOOKS.entries["PreToolUse"]
    assert HOOKS.add(doc) == ([], [])  # idempotent
    assert sorted(HOOKS.remove(doc, created)) == ["PreToolUse", "Stop"]
    assert doc.text == text
    assert HOOKS.remove(doc, created) == []


def test_new_lines_follow_the_file_indent_and_line_ending() -> None:
    doc = Document(DOCUMENTS["tabs"], "s.json")
    HOOKS.add(doc)
    assert '\n\t"hooks": {\n\t\t"PreToolUse": [\n\t\t\t{\n' in doc.text
    crlf = Document(DOCUMENTS["crlf"], "s.json")
    HOOKS.add(crlf)
    assert "\n" not in crlf.text.replace("\r\n", "")
    assert '  "a": [1, 2],\r\n  "b": "x",\r\n  "hooks": {\r\n    "PreToolUse": [' in crlf.text


def test_a_one_line_list_stays_on_one_line() -> None:
    doc = Document(DOCUMENTS["one line"], "s.json")
    HOOKS.add(doc)
    assert doc.text.startswith(
        '{"permissions": {"allow": ["Bash"]}, "hooks": {"Stop": [{"hooks": [{"command": "say"}]}, {'
    )
    assert "\n" not in doc.text.split("}]}, {", 1)[0]


def test_the_users_empty_hooks_object_and_lists_stay() -> None:
    text = '{\n  "hooks": {}\n}\n'
    doc = Document(text, "s.json")
    _, created = HOOKS.add(doc)
    assert json.loads(doc.text)["hooks"]["Stop"] == [HOOKS.entries["Stop"]]
    HOOKS.remove(doc, created)
    assert doc.text == text  # the user's "hooks": {} was there before: it stays
    text = '{\n  "hooks": {\n    "Stop": [],\n    "AfterAgent": []\n  }\n}\n'
    doc = Document(text, "s.json")
    _, created = HOOKS.add(doc)
    HOOKS.remove(doc, created)
    assert doc.text == text


def test_without_a_record_of_what_install_created_uninstall_keeps_the_empties() -> None:
    doc = Document("{}", "s.json")
    HOOKS.add(doc)
    HOOKS.remove(doc, [])
    assert json.loads(doc.text) == {"hooks": {"PreToolUse": [], "Stop": []}}


def test_ours_from_another_command_is_replaced_and_found_by_uninstall() -> None:
    doc = Document("{}", "s.json")
    _, created = HOOKS.add(doc)
    other = "/opt/venv/bin/sciontool hook --dialect=claude"
    moved = HookSet(
        {"Stop": {"hooks": [{"type": "command", "command": other}]}},
        {"Stop": other},
    )
    assert moved.add(doc) == (["Stop"], [])
    assert json.loads(doc.text)["hooks"]["Stop"] == [moved.entries["Stop"]]  # replaced, not added
    assert HOOKS.remove(doc, created) == ["PreToolUse", "Stop"]  # any program running our hook
    assert json.loads(doc.text) == {}


def test_jsonc_comments_are_read_as_whitespace_and_kept() -> None:
    text = '{\n  // my theme\n  "ui": {"theme": "GitHub"}, /* inline */\n  "a": "//not a comment"\n}\n'
    with pytest.raises(SciontoolError):
        Document(text, "s.json")
    doc = Document(text, "s.json", comments=True)
    _, created = HOOKS.add(doc)
    assert "// my theme" in doc.text and "/* inline */" in doc.text
    assert json.loads(doc.text.replace("// my theme", "").replace("/* inline */", ""))["hooks"]
    HOOKS.remove(doc, created)
    assert doc.text == text


@pytest.mark.parametrize("text", ["[]", '"settings"', "{", '{"a": 1} {"b": 2}', ""])
def test_what_is_not_a_json_object_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(SciontoolError) as caught:
        Document(text, "/p/settings.json")
    assert str(caught.value).startswith("/p/settings.json: ")
    assert "\n" not in str(caught.value)


def test_flat_hooks_of_core_agent() -> None:
    command = "sciontool hook --dialect=core-agent"
    hooks = HookSet({"tool-start": {"command": command, "timeout_seconds": 10}}, {"tool-start": command})
    text = '{\n  "hooks": {\n    "tool-start": [\n      {"command": "logger"}\n    ]\n  }\n}\n'
    doc = Document(text, "config.json")
    _, created = hooks.add(doc)
    assert json.loads(doc.text)["hooks"]["tool-start"] == [
        {"command": "logger"},
        {"command": command, "timeout_seconds": 10},
    ]
    hooks.remove(doc, created)
    assert doc.text == text


# --- Codex's notify -------------------------------------------------------------------------------

ARGV = ["sciontool", "hook", "--dialect=codex"]
LINE = 'notify = ["sciontool", "hook", "--dialect=codex"]'


@pytest.mark.parametrize(
    "text",
    [
        "",
        'model = "o3"\n',
        'model = "o3"',
        '# my config\nmodel = "o3"\n\n# providers\n[model_providers.x]\nname = "x"\n',
        '[profiles.a]\nmodel = "o3"\n',
        'model = "o3"\r\n[tui]\r\nnotifications = true\r\n',
        'instructions = """\nmulti\n[not a table]\n"""\n[t]\nk = 1\n',
    ],
)
def test_notify_is_a_top_level_key_and_goes_away_cleanly(text: str) -> None:
    added = tomledit.set_notify(text, ARGV, "config.toml", force=False)
    assert LINE in added
    for line in text.splitlines():
        assert line in added
    assert tomledit.set_notify(added, ARGV, "config.toml", force=False) == added
    removed = tomledit.unset_notify(added, ARGV, "config.toml")
    assert removed == text or (removed == text + "\n" and not text.endswith("\n"))


def test_a_multi_line_notify_is_replaced_whole_when_forced_and_put_back_on_unset() -> None:
    text = 'notify = [\n  "python3",\n  "notify.py",  # mine\n]\nmodel = "o3"\n'
    with pytest.raises(SciontoolError, match=re.escape('notify is already ["python3", "notify.py"]')):
        tomledit.set_notify(text, ARGV, "config.toml", force=False)
    forced = tomledit.set_notify(text, ARGV, "config.toml", force=True)
    kept = "".join(tomledit.KEPT + line for line in text.splitlines(keepends=True)[:4])
    assert forced == f'{tomledit.MARK}\n{LINE}\n{kept}model = "o3"\n'
    assert tomledit.unset_notify(forced, ARGV, "config.toml") == text


def test_our_notify_from_another_command_is_replaced_without_force() -> None:
    text = f'{tomledit.MARK}\n{LINE}\nmodel = "o3"\n'
    moved = ["/opt/venv/bin/sciontool", "hook", "--dialect=codex"]
    again = tomledit.set_notify(text, moved, "config.toml", force=False)
    assert again == f'{tomledit.MARK}\n{tomledit.render(moved)}\nmodel = "o3"\n'
    assert tomledit.unset_notify(again, ARGV, "config.toml") == 'model = "o3"\n'


def test_unset_leaves_someone_elses_notify() -> None:
    text = 'notify = ["sh", "n.sh"]\n'
    assert tomledit.unset_notify(text, ARGV, "config.toml") == text


def test_a_notify_inside_a_table_is_not_the_top_level_one() -> None:
    text = "[tui]\nnotify = true\n"
    added = tomledit.set_notify(text, ARGV, "config.toml", force=False)
    assert added == f"{tomledit.MARK}\n{LINE}\n[tui]\nnotify = true\n"
