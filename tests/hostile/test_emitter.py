"""The sender on a hostile machine: the hook configuration may be the model's own writing, so a
hook command sees none of the agent's credentials unless passed by name, and a command or gate
that misbehaves refuses that handler only; the next one runs."""

from __future__ import annotations

import io
import json
import os
import shlex
import sys
from pathlib import Path

import pytest
from conftest import sciontool

from sciontool_py.emitter import AllowAll, Dispatcher
from sciontool_py.emitter.config import parse_hooks
from sciontool_py.emitter.environment import looks_like_credential

CREDENTIALS = {
    "ANTHROPIC_API_KEY": "sk-ant-1",
    "OPENAI_API_KEY": "sk-2",
    "GITHUB_TOKEN": "ghp_3",
    "AWS_SECRET_ACCESS_KEY": "aws-4",
    "AWS_SESSION_TOKEN": "aws-5",
    "SCION_AUTH_TOKEN": "scion-6",
    "DB_PASSWORD": "pw-7",
    "MY_CLIENT_SECRET_VALUE": "sec-8",
    "GOOGLE_APPLICATION_CREDENTIALS": "/var/run/gcp.json",
    "AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/aws-token",
    "AZURE_FEDERATED_TOKEN_FILE": "/var/run/azure-token",
}
ORDINARY = {"PATH": os.environ["PATH"], "HOOK_VISIBLE": "shown", "TOKENIZER_MODEL": "bpe"}


def env_dump_config(tmp_path: Path) -> tuple[Path, Path]:
    out = tmp_path / "env.json"
    python = shlex.quote(sys.executable)
    dump = f"{python} -c 'import json, os; print(json.dumps(dict(os.environ)))' > {shlex.quote(str(out))}"
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"hooks": {"agent-end": [{"command": dump}]}}))
    return config, out


def test_credentials_never_reach_a_hook_unless_passed_by_name(tmp_path: Path) -> None:
    config, out = env_dump_config(tmp_path)
    env = {**ORDINARY, **CREDENTIALS}
    result = sciontool("emit", "agent-end", "--config", str(config), env=env)
    assert result.returncode == 0, result.stderr
    seen = json.loads(out.read_text())
    assert not set(CREDENTIALS) & set(seen)
    assert {k: seen[k] for k in ORDINARY} == ORDINARY
    # A hook that needs one (a `sciontool hook` without a token file) gets exactly that one.
    result = sciontool(
        "emit", "agent-end", "--config", str(config), "--pass-env", "SCION_AUTH_TOKEN", env=env
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(out.read_text())
    assert set(CREDENTIALS) & set(seen) == {"SCION_AUTH_TOKEN"}


@pytest.mark.parametrize("name", [*CREDENTIALS, "github_token", "SECRET_KEY", "GITHUB_APP_PRIVATE_KEY"])
def test_credential_names_are_recognised(name: str) -> None:
    assert looks_like_credential(name)


@pytest.mark.parametrize("name", [*ORDINARY, "HOME", "TOKENS_PER_TURN", "KEYBOARD", "PASSWORDLESS"])
def test_ordinary_names_are_not_withheld(name: str) -> None:
    assert not looks_like_credential(name)


def test_a_nul_in_a_command_refuses_that_handler_and_the_next_runs(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    config = tmp_path / "config.json"
    hooks = [{"command": "echo a\u0000b"}, {"command": f"touch {shlex.quote(str(ran))}"}]
    config.write_text(json.dumps({"hooks": {"agent-end": hooks}}))
    result = sciontool("emit", "agent-end", "--config", str(config))
    assert result.returncode == 0
    assert result.stderr == (
        'hooks: agent-end handler #0 ("echo a\\u0000b"): cannot start /bin/sh: embedded null byte\n'
    )
    assert ran.exists()


class ExitingGate:
    """A gate whose policy code calls sys.exit on a command it dislikes."""

    def check(self, command: str) -> str | None:
        if "bad" in command:
            raise SystemExit(3)
        return None


def test_a_gate_raising_system_exit_refuses_that_handler_and_the_next_runs(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    hooks = {"agent-end": [{"command": "bad"}, {"command": f"touch {shlex.quote(str(ran))}"}]}
    stderr = io.StringIO()
    Dispatcher(parse_hooks(hooks), gate=ExitingGate(), stderr=stderr).on_turn_end()  # does not exit
    assert (
        stderr.getvalue()
        == 'hooks: agent-end handler #0 ("bad"): permission gate refused: gate error: SystemExit: 3\n'
    )
    assert ran.exists()


def test_explicit_withholding_wins_over_passing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCION_AUTH_TOKEN", "scion-6")
    monkeypatch.setenv("HOOK_VISIBLE", "shown")
    out = tmp_path / "seen"
    probe = (
        f'printf "%s|%s" "${{SCION_AUTH_TOKEN-unset}}" "${{HOOK_VISIBLE-unset}}" > {shlex.quote(str(out))}'
    )
    hooks = parse_hooks({"agent-end": [{"command": probe}]})
    Dispatcher(hooks, gate=AllowAll(), passed_env=["SCION_AUTH_TOKEN"]).on_turn_end()
    assert out.read_text() == "scion-6|shown"
    Dispatcher(
        hooks,
        gate=AllowAll(),
        passed_env=["SCION_AUTH_TOKEN"],
        withheld_env=["SCION_AUTH_TOKEN", "HOOK_VISIBLE"],
    ).on_turn_end()
    assert out.read_text() == "unset|unset"
