"""The typer app: every command's options and help, wired to the modules that do the work."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from sciontool_py.errors import SciontoolError

if TYPE_CHECKING:
    from sciontool_py.harness.base import Scope

app = typer.Typer(
    name="sciontool",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,  # plain click help: it wraps at the terminal width instead of cutting
)
dialect_app = typer.Typer(help="Find, inspect and test dialects.", no_args_is_help=True)
app.add_typer(dialect_app, name="dialect")
harness_app = typer.Typer(
    help="Wire a harness's hooks to `sciontool hook` (Claude Code, Gemini CLI, Codex, opencode, core-agent, "
    "Copilot CLI, Antigravity, Grok Build, Qwen Code, Droid).",
    no_args_is_help=True,
)
app.add_typer(harness_app, name="harness")


def _print_version(value: bool) -> None:
    if value:
        from sciontool_py import __version__

        typer.echo(f"sciontool {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Scion's agent hook pipe, both ends: receive envelopes as Scion does, send them as core-agent does."""


DialectOpt = Annotated[
    Optional[str], typer.Option("--dialect", help="Dialect name (default: claude, as in Scion).")
]
DialectFileOpt = Annotated[
    Optional[str], typer.Option("--dialect-file", help="A dialect.yaml to use instead of a name.")
]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# hook, status and normalize run in fastpath (no typer on the hook path; main.py routes there).
# They are declared here too so that `sciontool --help` lists them.
_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def _fast(command: str, args: list[str] | None) -> None:
    from sciontool_py import fastpath

    raise typer.Exit(fastpath.run(command, args or []))


@app.command(
    context_settings=_PASS_THROUGH, add_help_option=False, short_help="Receive one envelope: Scion's hook."
)
def hook(args: Annotated[Optional[list[str]], typer.Argument()] = None) -> None:
    """Receive one envelope on stdin and update the agent's status as Scion does."""
    _fast("hook", args)


@app.command(context_settings=_PASS_THROUGH, add_help_option=False, short_help="Set a sticky status.")
def status(args: Annotated[Optional[list[str]], typer.Argument()] = None) -> None:
    """Set a sticky status: ask_user, blocked, task_completed, limits_exceeded."""
    _fast("status", args)


@app.command(
    context_settings=_PASS_THROUGH, add_help_option=False, short_help="Envelopes in, canonical events out."
)
def normalize(args: Annotated[Optional[list[str]], typer.Argument()] = None) -> None:
    """Envelopes in, canonical event lines out (JSONL); no side effects."""
    _fast("normalize", args)


@app.command(short_help="Send envelopes as core-agent does.")
def emit(
    event: Annotated[
        Optional[str], typer.Argument(help="tool-start, tool-end, model-start or agent-end.")
    ] = None,
    tool_name: Annotated[Optional[str], typer.Option(help="The tool (tool-start, tool-end).")] = None,
    tool_input: Annotated[
        Optional[str], typer.Option(metavar="JSON", help="The call's arguments object (tool-start).")
    ] = None,
    tool_output: Annotated[
        Optional[str], typer.Option(metavar="JSON", help="The tool's response object (tool-end).")
    ] = None,
    session_id: Annotated[str, typer.Option(help="Added to every envelope when set.")] = "",
    events: Annotated[
        Optional[str],
        typer.Option(
            metavar="FILE|-",
            help='Agent events as JSONL (ADK Event JSON per line; {"turn_end": true} ends a turn), '
            "fired by core-agent's rules.",
        ),
    ] = None,
    config: Annotated[
        Optional[str],
        typer.Option(
            metavar="PATH",
            help="Run the hooks of this .agents/config.json instead of printing. Commands pass an "
            "ALLOW-ALL permission gate, narrowed only by --deny.",
        ),
    ] = None,
    deny: Annotated[
        Optional[list[str]],
        typer.Option(metavar="PATTERN", help="With --config: refuse commands matching this glob (re:REGEX)."),
    ] = None,
    withhold: Annotated[
        Optional[list[str]],
        typer.Option(metavar="NAME", help="With --config: keep this environment variable from hooks."),
    ] = None,
    pass_env: Annotated[
        Optional[list[str]],
        typer.Option(
            metavar="NAME",
            help="With --config: pass this credential-looking variable (withheld by default) to hooks.",
        ),
    ] = None,
    model_start_on_final_text: Annotated[
        bool,
        typer.Option(
            "--model-start-on-final-text",
            help="Let non-partial text fire model-start (non-streaming agents).",
        ),
    ] = False,
) -> None:
    """Send hook envelopes as core-agent does; print them, or run hooks with --config.

    Printed output pipes into `sciontool hook --dialect=core-agent`. A failing
    hook is one line on stderr and does not change the exit status.
    """
    from sciontool_py.emitter.cli import emit_command

    emit_command(
        event=event,
        tool_name=tool_name,
        tool_input=tool_input,
        tool_output=tool_output,
        session_id=session_id,
        events=events,
        config=config,
        deny=deny or [],
        withhold=withhold or [],
        pass_env=pass_env or [],
        model_start_on_final_text=model_start_on_final_text,
    )


@dialect_app.command("list")
def dialect_list() -> None:
    """Every dialect file on the lookup path, in lookup order: name, file and status.

    Status: ok; invalid: FIRST ERROR; name mismatch: declares X; shadowed by PATH.
    """
    from sciontool_py.dialect.discover import dialect_entries

    for name, path, status in dialect_entries():
        typer.echo(f"{name}\t{path}\t{status}")


@dialect_app.command("show")
def dialect_show(name: Annotated[str, typer.Argument(help="Dialect name.")]) -> None:
    """The resolved, validated dialect as JSON."""
    import json

    from sciontool_py.dialect.discover import find_dialect

    spec = find_dialect(name)
    typer.echo(json.dumps(spec.to_json(), indent=2, ensure_ascii=False))


@dialect_app.command("check", short_help="Validate dialect files (file:line:col).")
def dialect_check(
    paths: Annotated[list[str], typer.Argument(help="dialect.yaml files, or folders holding one.")],
    fixtures: Annotated[
        Optional[list[str]],
        typer.Option(
            "--fixtures", help="Fixture files or folders: warn about paths their envelopes never carry."
        ),
    ] = None,
) -> None:
    """Validate dialect files: every problem as file:line:col, then likely mistakes as warnings."""
    from sciontool_py.authoring.check import check_file, dialect_path, envelope_keys

    carried = envelope_keys(fixtures) if fixtures else None
    problems = [p for path in paths for p in check_file(dialect_path(path), carried)]
    for problem in problems:
        typer.echo(str(problem))
    errors = sum(p.severity == "error" for p in problems)
    warnings = len(problems) - errors
    typer.echo(f"{len(paths)} checked, {_count(errors, 'error')}, {_count(warnings, 'warning')}")
    raise typer.Exit(1 if errors else 0)


@dialect_app.command("test", short_help="Run fixtures against dialects.")
def dialect_test(
    fixtures: Annotated[list[str], typer.Argument(help="Fixture files or folders.")],
    dialect: Annotated[
        Optional[str], typer.Option("--dialect", help="Test every fixture against this dialect.")
    ] = None,
    dialect_file: DialectFileOpt = None,
    update: Annotated[
        bool,
        typer.Option(
            "--update", help="Write what the dialect produces now into each differing fixture's expect."
        ),
    ] = False,
) -> None:
    """Run fixtures through normalization and the response lookup; print a diff per failure.

    Without --dialect or --dialect-file, each folder uses its own dialect.yaml,
    else the dialect named like the folder. With --update, each fixture that
    differs is rewritten (its envelope untouched) and the changes are shown.
    """
    from sciontool_py.contract import (
        DialectChooser,
        check_fixture,
        failure_report,
        fixture_files,
        update_fixture,
    )

    chooser = DialectChooser(dialect, dialect_file)
    files = fixture_files(fixtures)
    if not files:
        raise SciontoolError(f"no fixtures (*.json) in {' '.join(fixtures)}")
    failed = updated = 0
    for path in files:
        if update:
            changes = update_fixture(chooser, path)
            if changes:
                updated += 1
                typer.echo(failure_report(path, changes, verb="UPDATED"))
            continue
        problems = check_fixture(chooser, path)
        if problems:
            failed += 1
            typer.echo(failure_report(path, problems))
    if update:
        typer.echo(f"{len(files) - updated} unchanged, {updated} updated")
        return
    typer.echo(f"{len(files) - failed} passed, {failed} failed")
    raise typer.Exit(1 if failed else 0)


@dialect_app.command("scaffold", short_help="Start a dialect from recorded envelopes.")
def dialect_scaffold(
    name: Annotated[str, typer.Argument(help="Name of the new dialect.")],
    log: Annotated[
        str,
        typer.Option("--from", help="Recorded envelopes (JSONL), e.g. from a `cat >> events.jsonl` hook."),
    ],
    out: Annotated[str, typer.Option("--out", help="Folder to write NAME/ into.")] = ".",
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
) -> None:
    """Write a starter NAME/dialect.yaml and one fixture per raw event from a recorded log."""
    from sciontool_py.authoring.scaffold import scaffold, write

    result = scaffold(name, log, out)
    write(result, force)
    for path in result.files:
        typer.echo(f"wrote {path}")
    typer.echo(f"{_count(result.mapped, 'raw event')} mapped, {result.todo} left as TODO")


@dialect_app.command("schema")
def dialect_schema(
    path: Annotated[
        bool, typer.Option("--path", help="Print where the installed schema file is, for a $schema line.")
    ] = False,
) -> None:
    """Print the JSON Schema of dialect.yaml (draft 2020-12)."""
    if path:
        import os

        from sciontool_py.dialect.load import packaged_dir

        typer.echo(os.path.join(packaged_dir(), "dialect.schema.json"))
        return
    from sciontool_py.authoring.schema import schema_text

    typer.echo(schema_text(), nl=False)


HarnessArg = Annotated[
    str,
    typer.Argument(
        help="claude, gemini, codex, opencode, core-agent, agentino, copilot, antigravity, grok-build, "
        "qwen-code, droid, auggie, mistral-vibe or hermes.",
        show_default=False,
    ),
]
ProjectOpt = Annotated[
    Optional[str],
    typer.Option("--project", metavar="DIR", help="Wire this project folder (the default: the current one)."),
]
UserOpt = Annotated[bool, typer.Option("--user", help="Wire the user's own settings instead of a project's.")]
CommandOpt = Annotated[
    Optional[str],
    typer.Option(
        "--command",
        metavar="PREFIX",
        help="What runs sciontool in the hooks, e.g. an absolute path (default: `sciontool` when "
        "PATH finds it, else this program's absolute path).",
        show_default=False,
    ),
]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Print a unified diff; write nothing.")]
BackupOpt = Annotated[
    bool, typer.Option("--backup", help="Keep each changed file's previous text as FILE.bak.")
]


def _scope(
    project: str | None, user: bool, command: str | None, force: bool = False, writes: bool = True
) -> tuple[Scope, str]:
    """The scope the command works in, and what to tell the user about the hooks' program."""
    from sciontool_py.harness.base import Scope
    from sciontool_py.harness.program import hook_program

    if user and project is not None:
        raise SciontoolError("--project and --user exclude each other")
    if writes and project is not None and not os.path.isdir(project):
        # A typo must not create a project (or send core-agent up to a parent's .agents).
        raise SciontoolError(f"--project {project}: no such folder")
    if not user and not os.path.isabs(project or "."):
        try:
            os.getcwd()
        except FileNotFoundError:
            gone = "the current folder no longer exists: pass --project DIR (absolute)"
            raise SciontoolError(gone) from None
    try:
        (command or "").encode("utf-8")
    except UnicodeEncodeError:  # a byte that is not UTF-8 (kept by Python as a lone surrogate)
        bad = "--command holds a byte that is not UTF-8: no settings file can carry it"
        raise SciontoolError(bad) from None
    prefix, said = hook_program(command)
    return Scope(None if user else (project or "."), prefix, force), said


@harness_app.command("install")
def harness_install(
    name: HarnessArg,
    project: ProjectOpt = None,
    user: UserOpt = False,
    dry_run: DryRunOpt = False,
    command: CommandOpt = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace another program in Codex's notify (uninstall puts it back)."),
    ] = False,
    backup: BackupOpt = False,
) -> None:
    """Merge hooks for every event the harness fires and its dialect maps into its settings.

    Other settings and hooks stay as they were; a second run changes nothing; a run with
    another --command replaces sciontool's hooks. Uninstall undoes exactly this.
    """
    from sciontool_py.harness import find_harness
    from sciontool_py.harness.apply import run

    scope, said = _scope(project, user, command, force)
    typer.echo(run(find_harness(name), scope, True, dry_run, backup), nl=False)
    if said:
        typer.echo(said)


@harness_app.command("uninstall")
def harness_uninstall(
    name: HarnessArg,
    project: ProjectOpt = None,
    user: UserOpt = False,
    dry_run: DryRunOpt = False,
    command: CommandOpt = None,
    backup: BackupOpt = False,
) -> None:
    """Remove exactly what install added: sciontool's hooks (found by their command, whatever
    --command ran them), and the keys, file and folders install created; nothing else changes."""
    from sciontool_py.harness import find_harness
    from sciontool_py.harness.apply import run

    scope, _ = _scope(project, user, command)  # ours are found whatever program runs them
    typer.echo(run(find_harness(name), scope, False, dry_run, backup), nl=False)


@harness_app.command("show")
def harness_show(
    name: HarnessArg, project: ProjectOpt = None, user: UserOpt = False, command: CommandOpt = None
) -> None:
    """Print the hook configuration install would merge, and where; writes nothing."""
    from sciontool_py.harness import find_harness

    scope, _ = _scope(project, user, command, writes=False)
    typer.echo(find_harness(name).show(scope), nl=False)


def _command_path(args: list[str]) -> str:
    """`sciontool dialect check` for ["dialect", "check", ...]: the prefix of the command's errors."""
    words = ["sciontool"]
    group: typer.Typer | None = app
    for arg in args:
        if group is None:
            break
        commands = {c.name or (c.callback.__name__ if c.callback else "") for c in group.registered_commands}
        groups = {g.name: g.typer_instance for g in group.registered_groups}
        if arg in commands:
            words.append(arg)
            group = None
        elif arg in groups:
            words.append(arg)
            group = groups[arg]
        elif not arg.startswith("-"):
            break
    return " ".join(words)


def run(args: list[str]) -> int:
    """Run the app; every error, usage errors included, is one line on stderr and exit 1."""
    from sciontool_py.fastpath import error_line

    if args and args[0] in ("--install-completion", "--show-completion"):
        from sciontool_py import shell_completion

        try:
            sys.stdout.write(shell_completion.run(args[0], args[1:]))
        except (SciontoolError, OSError) as exc:
            error_line(f"sciontool {args[0]}: {exc}")
            return 1
        return 0
    try:
        code = app(args or ["--help"], prog_name="sciontool", standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        return 1
    except SciontoolError as exc:
        error_line(f"{_command_path(args)}: {exc}")
        return 1
    except Exception as exc:
        # Click's errors (typer vendors click, so match by shape, not class).
        if not hasattr(exc, "format_message"):
            from sciontool_py.fs import home_dir
            from sciontool_py.log.writer import AgentLog

            where = _command_path(args)
            AgentLog(home_dir(), quiet=True).traceback(where, exc)
            error_line(f"{where}: internal error: {type(exc).__name__}: {exc}")
            return 1
        if type(exc).__name__ == "NoArgsIsHelpError":
            # A group named without a command (`sciontool dialect`): its help is the answer,
            # as for `sciontool` alone. Rich help is already printed; plain help is the message.
            sys.stdout.write(exc.format_message())
            return 0
        ctx = getattr(exc, "ctx", None)
        where = ctx.command_path if ctx is not None else "sciontool"
        hint = f" (see '{where} --help')" if ctx is not None else ""
        error_line(f"{where}: {exc.format_message()}{hint}")
        return 1
    return code if isinstance(code, int) else 0
