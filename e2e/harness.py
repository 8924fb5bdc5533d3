"""What a harness is to `make e2e`: its npm package, how it is wired and run, and its scenarios.

Each harness is one module beside this one (claude.py, gemini.py, codex.py, opencode.py) that
builds a `Harness`; run.py lists them in HARNESSES. The headless scenarios every harness runs
are built here from its `headless` command, and the interactive ones (tmux) from its `Tui`:
what its screen shows when it is ready, asks for approval, asks a question, was interrupted.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents import raw_name
from fake_model import FINAL, Call, Reply
from session import RETRY, Run, Session, Tmux

Info = dict[str, Any]
# An expectation of the hello scenario: the next hook call for this raw event leaves
# agent-info.json with these keys, and the agent.log line it writes ends with LOG ("[TAG] MESSAGE").
Step = tuple[str, Info]
LOG = "log"

Drive = Callable[[Session, "Harness"], None]
SECOND = "Second turn done."


@dataclass(frozen=True)
class Scenario:
    name: str
    replies: tuple[Reply, ...]
    # Runs the harness: headless turns, or a TUI in tmux. It records what the human was asked
    # (session.truth.human) and where the harness fires no hook (session.truth.windows, with why).
    drive: Drive
    latency: float = 0.6  # seconds each model request takes unless its reply says otherwise
    hooks_checked: bool = False  # the hello scenario: every hook call checked against `expected`


@dataclass
class Harness:
    name: str
    package: str
    version: str
    # Writes the harness's own config in the run's HOME / project, runs `sciontool harness
    # install`, and returns the environment the harness runs with (Run.env plus its variables).
    setup: Callable[[Run], dict[str, str]]
    # The argv of one headless turn; `resume` continues the last session.
    headless: Callable[[str, bool], list[str]]
    expected: list[Step]
    api_error: int = 500  # a status the harness gives up on at once (with its retries turned off)
    tui: Tui | None = None  # the interactive scenarios, in tmux
    extra: tuple[str, ...] = ()  # more npm packages the harness needs (Droid's platform binary)
    extra_prefix: str | None = None  # where they go under the cache, when not beside the harness
    pending: list[tuple[str, list[Step]]] = field(default_factory=list)
    # Where the harness fires no hook before a model request: the raw events that do announce
    # one (a prompt, a tool's end), and why the others go unsaid. A request no such call
    # announced (agents.py) is a silent window (docs/e2e.md, "Where the harness says nothing").
    model_hooks: tuple[str, ...] = ()
    silent_model: str = ""
    # A harness from PyPI instead of npm, in a venv under the cache (venv-NAME): the oldest Python
    # it runs on; `package` and `version` are then the PyPI ones.
    python: tuple[int, int] | None = None
    # The raw event of its session's end: a headless run that exits non-zero without firing it is
    # a crash (agents.py), as Scion's init would classify it.
    session_end: str = "SessionEnd"
    # The lifecycle scenarios (lifecycle.py), and the signal that makes it exit mid-tool without
    # its end hook where one does (exit-unsaid).
    lifecycle: bool = False
    quit_signal: int = signal.SIGTERM
    # The raw event the harness fires per streamed chunk of an answer (Gemini CLI's AfterModel),
    # which install leaves unwired: the streamed-answer scenario, a slow answer in many chunks,
    # must read thinking to its last with no hook call for any chunk.
    chunk_event: str = ""

    def scenarios(self, tmux: bool) -> list[Scenario]:
        """The headless scenarios, and the interactive ones when TMUX (tmux is installed)."""
        return headless_scenarios(self) + (interactive_scenarios(self.tui) if self.tui and tmux else [])


def turn(prompt: str, resume: bool = False) -> Drive:
    def drive(session: Session, harness: Harness) -> None:
        session.headless(harness.headless(prompt, resume))

    return drive


def _resume(session: Session, harness: Harness) -> None:
    session.headless(harness.headless("first turn: run a tool", False))
    session.headless(harness.headless("second turn, resumed: run a tool", True))


def headless_scenarios(harness: Harness) -> list[Scenario]:
    return [
        Scenario(
            "hello", (Reply(calls=(Call("hello"),)),), turn("say hello using the shell"), hooks_checked=True
        ),
        Scenario(
            "parallel-tools",
            (Reply(calls=(Call("p1", 2.0), Call("p2", 0.5), Call("p3", 1.0))),),
            turn("run three tools at once"),
        ),
        Scenario(
            "slow-model",
            (Reply(calls=(Call("s1", 0.5),), delay=5.0), Reply(text="Slowly done.", delay=5.0)),
            turn("think slowly"),
        ),
        Scenario("failing-tool", (Reply(calls=(Call("f1", 0.5, rc=3),)),), turn("run a failing tool")),
        Scenario(
            "api-error",
            (Reply(calls=(Call("e1", 0.5),)), Reply(error=harness.api_error, repeat=True)),
            turn("the model fails after one tool"),
        ),
        Scenario(
            "resume",
            (Reply(calls=(Call("r1", 0.5),)), Reply(), Reply(calls=(Call("r2", 1.0),))),
            _resume,
        ),
        *([Scenario("streamed-answer", STREAMED, _streamed)] if harness.chunk_event else []),
    ]


# A slow answer streamed in eight chunks a second apart, after a tool.
STREAMED = (
    Reply(calls=(Call("g1", 0.5),)),
    Reply(text=" ".join(f"word{n}" for n in range(16)) + " " + FINAL, chunks=8, gap=1.0),
)


def _streamed(session: Session, harness: Harness) -> None:
    session.headless(harness.headless("answer slowly", False))
    fired = sum(raw_name(r) == harness.chunk_event for r in session.run.records())
    if fired:
        session.failures.append(f"{harness.chunk_event} fired {fired} times: install wired it")


@dataclass(frozen=True)
class Tui:
    """How a harness's TUI looks to the tmux driver; a text left None skips its scenario."""

    argv: list[str]  # the TUI that asks before running the scripted tool
    trusted: list[str]  # the TUI that runs it without asking
    ready: str  # on screen when the prompt takes a message
    approval: str | None = None  # on screen when a tool awaits approval
    approve: tuple[str, ...] = ("Enter",)  # tmux keys
    deny: tuple[str, ...] = ("Escape",)
    question: str | None = "Which color do you want?"
    answer: tuple[str, ...] = ("Enter",)  # picks the first option (Red)
    interrupt: tuple[str, ...] = ("Escape",)  # pressed half a second apart
    interrupted: str | None = None  # on screen after the interrupt during a tool
    # On screen when the interrupted tool goes on as a background process (Codex): the agent's
    # turn is over, so the tool is no longer the agent's step from then on.
    backgrounded: str | None = None
    compact: str | None = None  # the command that compacts
    compacted: str | None = None  # on screen once compacted
    exit: str = "/exit"
    # Windows where the harness fires no hook, by scenario: from the human's key to the next hook.
    silent: dict[str, str] = field(default_factory=dict)
    # A prompt typed while a tool runs is queued until the turn lets it (opencode): the
    # queued-prompt scenario, where the agent must read executing until the tool ends.
    queues: bool = False


HUMAN_PAUSE = 1.5  # seconds the scripted human takes to answer


def open_tui(session: Session, argv: list[str], tui: Tui, prompt: str) -> Tmux:
    screen = session.tmux(argv)
    screen.wait_for(tui.ready, timeout=240)  # opencode took 113 s to start on a loaded machine
    screen.submit(prompt)
    return screen


def answer_human(
    session: Session,
    screen: Tmux,
    asked: str,
    keys: tuple[str, ...],
    by_hook: bool = False,
    meanwhile: Callable[[], None] = lambda: None,
) -> float:
    """Waits for the prompt ASKED, runs MEANWHILE (a look at another screen), lets the human pause,
    presses KEYS; the wait is `waiting_for_input`. Until the keys are taken (ASKED left the
    screen; BY_HOOK: a hook call started after the press) they are pressed again: a loaded TUI
    drops keys. The answer counts from the press it took."""
    shown = screen.wait_for(asked)
    meanwhile()
    time.sleep(HUMAN_PAUSE)
    pressed = screen.keys(*keys)
    while not screen.until(
        screen.hooked_since(pressed) if by_hook else lambda: asked not in screen.screen(), RETRY
    ):
        print(f"  driver: {' '.join(keys)} again, the TUI did not take it", flush=True)
        pressed = screen.keys(*keys)
    session.truth.human.append((shown, pressed))
    return pressed


def _close(screen: Tmux, tui: Tui) -> None:
    time.sleep(HUMAN_PAUSE)
    screen.quit(tui.exit)


def _silent(session: Session, tui: Tui, scenario: str, pressed: float) -> None:
    if scenario in tui.silent:
        session.window(pressed, tui.silent[scenario])


def interactive_scenarios(tui: Tui) -> list[Scenario]:
    def approval(name: str, keys: tuple[str, ...]) -> Drive:
        def drive(session: Session, harness: Harness) -> None:
            screen = open_tui(session, tui.argv, tui, "run a tool that needs approval")
            assert tui.approval is not None
            pressed = answer_human(session, screen, tui.approval, keys)
            if keys == tui.approve:
                screen.wait_for(FINAL)
            else:
                screen.wait_gone(tui.approval)
            _close(screen, tui)
            _silent(session, tui, name, pressed)

        return drive

    def question(session: Session, harness: Harness) -> None:
        assert tui.question is not None
        screen = open_tui(session, tui.trusted, tui, "ask me a question")
        # The question may stay on screen once answered; the question tool's end is a hook call.
        answer_human(session, screen, tui.question, tui.answer, by_hook=True)
        screen.wait_for(FINAL)
        _close(screen, tui)

    def interrupt(session: Session, harness: Harness) -> None:
        assert tui.interrupted is not None
        screen = open_tui(session, tui.trusted, tui, "run a long tool")
        session.tool_pid("i1")
        time.sleep(HUMAN_PAUSE)

        def stopped() -> bool:  # the keys were taken: the tool was killed, or the TUI says so
            assert tui.interrupted is not None
            return "end i1 " in session.run.marks.read_text() or tui.interrupted in screen.screen()

        while True:  # a loaded TUI may drop the keys
            pressed = screen.keys(tui.interrupt[0])
            for key in tui.interrupt[1:]:
                time.sleep(0.5)
                screen.keys(key)
            if screen.until(stopped, RETRY):
                break
            print("  driver: the interrupt again, the TUI did not take it", flush=True)
        shown = screen.wait_for(tui.interrupted)
        if tui.backgrounded is not None and tui.backgrounded in screen.screen():
            session.truth.released.append(shown)
        _close(screen, tui)
        _silent(session, tui, "interrupt", pressed)

    def compaction(session: Session, harness: Harness) -> None:
        assert tui.compact is not None and tui.compacted is not None
        compacted = tui.compacted
        screen = open_tui(session, tui.trusted, tui, "run a tool, then I compact")
        screen.wait_for(FINAL)
        time.sleep(HUMAN_PAUSE)
        screen.submit("a second turn")  # Claude Code compacts two rounds at least
        screen.wait_for(SECOND)
        time.sleep(HUMAN_PAUSE)
        screen.submit(tui.compact, lambda: compacted in screen.screen())
        _close(screen, tui)

    def queued(session: Session, harness: Harness) -> None:
        screen = open_tui(session, tui.trusted, tui, "run a tool, then I type more")
        session.tool_pid("q1")
        time.sleep(HUMAN_PAUSE)
        screen.type("and one more thing")  # queued: the tool still runs
        screen.wait_for(FINAL)  # opencode 1.18.33 sends it with the tool's result, in the same turn
        _close(screen, tui)

    out = []
    if tui.queues:
        replies = (Reply(calls=(Call("q1", 12.0),)), Reply())
        out.append(Scenario("queued-prompt", replies, queued))
    if tui.approval is not None:
        granted = (Reply(calls=(Call("a1", 1.0),), escalate=True),)
        out.append(Scenario("approval-granted", granted, approval("approval-granted", tui.approve)))
        denied = (Reply(calls=(Call("d1", 1.0),), escalate=True),)
        out.append(Scenario("approval-denied", denied, approval("approval-denied", tui.deny)))
    if tui.question is not None:
        out.append(Scenario("question", (Reply(ask=True),), question))
    if tui.interrupted is not None:
        out.append(Scenario("interrupt", (Reply(calls=(Call("i1", 60.0),)),), interrupt))
    if tui.compact is not None:
        # The summary is a model request as long as a turn's (Claude Code's offers the tools: it
        # takes the next reply; others' are side requests, answered at once).
        replies = (
            Reply(calls=(Call("c1", 0.5),)),
            Reply(),
            Reply(text=SECOND),
            Reply(text="Summary.", delay=3.0),
        )
        out.append(Scenario("compaction", replies, compaction))
    return out
