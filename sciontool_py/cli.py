"""The typer app: every command's options and help, wired to the modules that do the work."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from typer.core import TyperCommand

from sciontool_py.errors import SciontoolError
from sciontool_py.harness import INSTALLABLE, NAMES

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
harness_app = typer.Typer(help="Wire a harness's hooks to `sciontool hook`.", no_args_is_help=True)
app.add_typer(harness_app, name="harness")


class _Command(TyperCommand):
    """Help in the fast path's style (fastpath.HELP): arguments by their metavar, NAME when
    required and [NAME] when not, and no Python types (typer writes `{NAME}` and `NAME <str>`)."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(_shown(param) if param.required else f"[{_shown(param)}]")
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                arguments.append((_shown(param), getattr(param, "help", None) or ""))
            elif param.param_type_name == "option" and (record := param.get_help_record(ctx)):
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _shown(argument: Any) -> str:
    name = str(argument.metavar or argument.name.upper())
    return name if argument.nargs == 1 else f"{name}..."


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


DialectFileOpt = Annotated[
    Optional[str],
    typer.Option("--dialect-file", metavar="PATH", help="A dialect.yaml to use instead of a name."),
]


# Completion: each word a command takes from a fixed list, from the list itself.
def _starting(incomplete: str, names: tuple[str, ...] | list[str]) -> list[str]:
    return [name for name in names if name.startswith(incomplete)]


def _complete_dialects(incomplete: str) -> list[str]:
    from sciontool_py.dialect.discover import list_dialects

    try:
        names = [name for name, _ in list_dialects()]
    except (SciontoolError, OSError):  # an unreadable lookup path: no names, never a traceback
        return []
    return _starting(incomplete, names)


def _complete_emit_events(incomplete: str) -> list[str]:
    from sciontool_py.emitter.config import KNOWN_EVENTS

    return _starting(incomplete, KNOWN_EVENTS)


def _complete_fast_args(ctx: typer.Context, incomplete: str) -> list[str]:
    """hook, status and normalize take their words unparsed: a --dialect's value, status's TYPE."""
    typed = list(ctx.params.get("args") or ())
    if typed[-1:] == ["--dialect"]:
        return _complete_dialects(incomplete)
    if ctx.command.name == "status" and not typed:
        from sciontool_py.vocabulary import STATUS_TYPES

        return _starting(incomplete, tuple(STATUS_TYPES))
    return []


def _complete_harnesses(incomplete: str) -> list[str]:
    return _starting(incomplete, NAMES)


def _complete_installable(incomplete: str) -> list[str]:
    return _starting(incomplete, INSTALLABLE)


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
def hook(
    args: Annotated[Optional[list[str]], typer.Argument(autocompletion=_complete_fast_args)] = None,
) -> None:
    """Receive one envelope on stdin and update the agent's status as Scion does."""
    _fast("hook", args)


@app.command(context_settings=_PASS_THROUGH, add_help_option=False, short_help="Set a sticky status.")
def status(
    args: Annotated[Optional[list[str]], typer.Argument(autocompletion=_complete_fast_args)] = None,
) -> None:
    """Set a sticky status: ask_user, blocked, task_completed, limits_exceeded."""
    _fast("status", args)


@app.command(
    context_settings=_PASS_THROUGH, add_help_option=False, short_help="Envelopes in, canonical events out."
)
def normalize(
    args: Annotated[Optional[list[str]], typer.Argument(autocompletion=_complete_fast_args)] = None,
) -> None:
    """Envelopes in, canonical event lines out (JSONL); no side effects."""
    _fast("normalize", args)


@app.command(
    "run",
    context_settings=_PASS_THROUGH,
    add_help_option=False,
    short_help="Run a harness as Scion's init would.",
)
def run_command(args: Annotated[Optional[list[str]], typer.Argument()] = None) -> None:
    """Run a harness as its parent, as Scion's init does: `sciontool run [--name NAME] -- COMMAND`."""
    from sciontool_py.run import main

    raise typer.Exit(main(args or []))


@app.command(cls=_Command, short_help="Every agent in this HOME, in plain words.")
def agents(
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="A JSON array: each agent's fields, Scion's words beside the plain ones."
        ),
    ] = False,
    watch: Annotated[bool, typer.Option("--watch", help="Redraw live in the terminal; q quits.")] = False,
    notify: Annotated[
        Optional[str],
        typer.Option(
            metavar="COMMAND",
            help="With --watch: run COMMAND (sh -c) when an agent waits for you, finishes a turn or crashes, "
            "its fields as JSON on stdin (default: [agents] notify in ~/.config/sciontool-py/config.toml).",
        ),
    ] = None,
) -> None:
    """Every agent of this HOME: what it does now in plain words, since when, where, and its last message."""
    from sciontool_py.fs import home_dir

    home = home_dir()
    if watch:
        from sciontool_py.agents_watch import config_notify
        from sciontool_py.agents_watch import watch as watch_agents

        raise typer.Exit(watch_agents(home, notify if notify is not None else config_notify()))
    if notify is not None:
        raise SciontoolError("--notify needs --watch (alerts come from the live view)")
    from sciontool_py.agents_view import dumps, rows, table

    found = rows(home)
    if as_json:
        typer.echo(dumps([row.to_json() for row in found], indent=2))
        return
    import shutil
    import time

    width = shutil.get_terminal_size((80, 24)).columns
    typer.echo("\n".join(table(found, width, time.time())))


@app.command(cls=_Command, short_help="Send envelopes as core-agent does.")
def emit(
    event: Annotated[
        Optional[str],
        typer.Argument(
            metavar="EVENT",
            help="tool-start, tool-end, model-start or agent-end.",
            autocompletion=_complete_emit_events,
        ),
    ] = None,
    tool_name: Annotated[
        Optional[str], typer.Option(metavar="NAME", help="The tool (tool-start, tool-end).")
    ] = None,
    tool_input: Annotated[
        Optional[str], typer.Option(metavar="JSON", help="The call's arguments object (tool-start).")
    ] = None,
    tool_output: Annotated[
        Optional[str], typer.Option(metavar="JSON", help="The tool's response object (tool-end).")
    ] = None,
    session_id: Annotated[str, typer.Option(metavar="ID", help="Added to every envelope when set.")] = "",
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


@dialect_app.command("list", cls=_Command)
def dialect_list() -> None:
    """Every dialect file on the lookup path, in lookup order: name, file and status.

    Status: ok; invalid: FIRST ERROR; name mismatch: declares X; shadowed by PATH.
    """
    from sciontool_py.dialect.discover import dialect_entries

    for name, path, status in dialect_entries():
        typer.echo(f"{name}\t{path}\t{status}")


@dialect_app.command("show", cls=_Command)
def dialect_show(
    name: Annotated[
        str, typer.Argument(metavar="NAME", help="Dialect name.", autocompletion=_complete_dialects)
    ],
) -> None:
    """The resolved, validated dialect as JSON."""
    import json

    from sciontool_py.dialect.discover import find_dialect

    spec = find_dialect(name)
    typer.echo(json.dumps(spec.to_json(), indent=2, ensure_ascii=False))


@dialect_app.command("check", cls=_Command, short_help="Validate dialect files (file:line:col).")
def dialect_check(
    paths: Annotated[
        list[str],
        typer.Argument(metavar="PATH", help="dialect.yaml files, or folders holding one; - reads stdin."),
    ],
    fixtures: Annotated[
        Optional[list[str]],
        typer.Option(
            "--fixtures",
            metavar="PATH",
            help="Fixture files or folders: warn about paths their envelopes never carry.",
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


@dialect_app.command("test", cls=_Command, short_help="Run fixtures against dialects.")
def dialect_test(
    fixtures: Annotated[list[str], typer.Argument(metavar="FIXTURE", help="Fixture files or folders.")],
    dialect: Annotated[
        Optional[str],
        typer.Option(
            "--dialect",
            metavar="NAME",
            help="Test every fixture against this dialect.",
            autocompletion=_complete_dialects,
        ),
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
    from sciontool_py.authoring.contract import (
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


@dialect_app.command("scaffold", cls=_Command, short_help="Start a dialect from recorded envelopes.")
def dialect_scaffold(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Name of the new dialect.")],
    log: Annotated[
        str,
        typer.Option(
            "--from",
            metavar="LOG|-",
            help="Recorded envelopes (JSONL; - reads stdin), e.g. from a `cat >> events.jsonl` hook.",
        ),
    ],
    out: Annotated[str, typer.Option("--out", metavar="DIR", help="Folder to write NAME/ into.")] = ".",
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
) -> None:
    """Write a starter NAME/dialect.yaml and one fixture per raw event from a recorded log."""
    from sciontool_py.authoring.scaffold import scaffold, write

    result = scaffold(name, log, out)
    write(result, force)
    for path in result.files:
        typer.echo(f"wrote {path}")
    typer.echo(f"{_count(result.mapped, 'raw event')} mapped, {result.todo} left as TODO")


@dialect_app.command("schema", cls=_Command)
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


def _either(names: tuple[str, ...]) -> str:
    return f"{', '.join(names[:-1])} or {names[-1]}"


HarnessArg = Annotated[
    str,
    typer.Argument(
        metavar="NAME", help=f"{_either(NAMES)}.", show_default=False, autocompletion=_complete_harnesses
    ),
]
InstallableArg = Annotated[
    str,
    typer.Argument(
        metavar="NAME",
        help=f"{_either(INSTALLABLE)} (agentino's hooks are registered in its code: "
        "see `sciontool harness show agentino`).",
        show_default=False,
        autocompletion=_complete_installable,
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
NoRelayOpt = Annotated[
    bool,
    typer.Option(
        "--no-relay",
        help="Run sciontool itself in each shell hook, without the shell relay before it "
        "(docs/receiver.md; on by default on Linux with bash).",
    ),
]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Print a unified diff; write nothing.")]
BackupOpt = Annotated[
    bool, typer.Option("--backup", help="Keep each changed file's previous text as FILE.bak.")
]


def _scope(
    project: str | None,
    user: bool,
    command: str | None,
    force: bool = False,
    writes: bool = True,
    relay: bool = True,
) -> tuple[Scope, str]:
    """The scope the command works in, and what to tell the user about the hooks' program."""
    from sciontool_py.harness.base import Scope
    from sciontool_py.harness.program import hook_program, relay_prefix

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
    prefix, said = hook_program(command, project=not user)
    return Scope(None if user else (project or "."), prefix, force, relay_prefix() if relay else ""), said


@harness_app.command("install", cls=_Command)
def harness_install(
    name: InstallableArg,
    project: ProjectOpt = None,
    user: UserOpt = False,
    dry_run: DryRunOpt = False,
    command: CommandOpt = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace another program in Codex's notify (uninstall puts it back)."),
    ] = False,
    backup: BackupOpt = False,
    no_relay: NoRelayOpt = False,
) -> None:
    """Merge hooks for every event the harness fires and its dialect maps into its settings.

    Other settings and hooks stay as they were; a second run changes nothing; a run with
    another --command replaces sciontool's hooks. Uninstall undoes exactly this.
    """
    from sciontool_py.harness import find_harness
    from sciontool_py.harness.apply import run

    scope, said = _scope(project, user, command, force, relay=not no_relay)
    typer.echo(run(find_harness(name), scope, True, dry_run, backup), nl=False)
    if said:
        typer.echo(said)


@harness_app.command("uninstall", cls=_Command)
def harness_uninstall(
    name: InstallableArg,
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


@harness_app.command("show", cls=_Command)
def harness_show(
    name: HarnessArg,
    project: ProjectOpt = None,
    user: UserOpt = False,
    command: CommandOpt = None,
    no_relay: NoRelayOpt = False,
) -> None:
    """Print the hook configuration install would merge, and where; writes nothing."""
    from sciontool_py.harness import find_harness

    scope, _ = _scope(project, user, command, writes=False, relay=not no_relay)
    typer.echo(find_harness(name).show(scope), nl=False)


@app.command(cls=_Command, short_help="Check the wiring, state folder, telemetry and hub.")
def doctor(
    project: Annotated[
        Optional[str],
        typer.Option(
            "--project", metavar="DIR", help="Check this project's wiring (the default: the current folder)."
        ),
    ] = None,
    user: Annotated[
        bool, typer.Option("--user", help="Check the user's own settings instead of a project's.")
    ] = False,
) -> None:
    """One line per check, ok or the problem and its fix; exit 1 when any failed.

    For each harness wired in the scope: its hook's program is on the harness's PATH
    and runs, and the dialect it names is valid. Then: HOME is writable, the telemetry
    endpoint answers, and with a hub configured: /healthz, the token's expiry and a
    heartbeat. Checks this shell's environment: run it where the harness runs.
    """
    from sciontool_py.doctor import run as run_doctor
    from sciontool_py.doctor import scope_of

    raise typer.Exit(run_doctor(scope_of(project, user), typer.echo))


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
