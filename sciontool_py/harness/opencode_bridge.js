// sciontool-bridge: written by `sciontool harness install opencode`; `sciontool harness uninstall
// opencode` removes it. It turns opencode's bus events and tool hooks into JSON envelopes (the name
// in hook_event_name, as the opencode dialect maps it) and hands each to Scion's hook.
import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const COMMAND = __COMMAND__;
// The names the opencode dialect maps when this file was written; others are not sent.
const FORWARD = new Set(__FORWARD__);
const TIMEOUT_MS = 30000;
const RUNNING_LIMIT = 16; // hook processes at once, all sessions together
const SESSION_LIMIT = 256; // envelopes one session has waiting; beyond it its oldest waiting one is dropped
const QUEUE_LIMIT = 1024; // envelopes waiting in all; beyond it the longest queue loses its oldest
const QUEUE_CHARS = 16 * 1024 * 1024; // characters of JSON waiting in all: the same
const KEEP = 4096; // entries each record of sessions, messages and calls keeps; beyond it the oldest go
const TEXT_LIMIT = 65536; // characters of tool output or assistant text sent
const SIDE_AGENTS = new Set(["title", "summary"]); // their model requests are not the agent's turn

// opencode must never wait for the hook: nothing here is awaited by opencode, and each
// envelope goes to a child process started without waiting for it. One session's envelopes
// still go one after another (the next starts when the previous hook exits), so the hook sees
// them in order; at most RUNNING_LIMIT hooks run at once (200 busy sessions must not start 200
// processes), and the sessions take turns. What waits is JSON text in bounded queues; what
// they drop is counted, and the count reaches agent.log (note()). The hook's output goes
// nowhere: nothing it prints can reach opencode's screen.
const waiting = new Map(); // session id -> JSON lines not sent yet, oldest first
const ready = new Map(); // the sessions with lines waiting and no hook running, in turn order
const running = new Map(); // session id (or NOTE) -> {line, written, child}: its hook in flight
const NOTE = Symbol("note"); // the key of the hook saying how many envelopes were dropped
const endings = new Set(); // per instance: what it sends when opencode exits
let queued = 0; // lines in waiting
let queuedChars = 0;
let dropped = 0; // envelopes dropped and not said yet
let exiting = false; // from then on envelopes only queue, for handOff

// A set or map that forgets its oldest entry beyond KEEP: what opencode never ends (a call
// without its end, a session not seen again) cannot pile up.
function keep(collection, key, value) {
  if (!collection.has(key) && collection.size >= KEEP) collection.delete(collection.keys().next().value);
  if (collection instanceof Map) collection.set(key, value);
  else collection.add(key);
}

function start(key, line) {
  let child;
  try {
    child = spawn(COMMAND[0], COMMAND.slice(1), { stdio: ["pipe", "ignore", "ignore"], detached: true });
  } catch {
    return requeue(key); // the hook only observes: a missing sciontool never breaks opencode
  }
  const head = { line, written: false, child };
  running.set(key, head);
  // child.kill() signals only a child the runtime has not seen exit: never a reused pid.
  const timer = setTimeout(() => child.kill("SIGKILL"), TIMEOUT_MS);
  timer.unref();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    clearTimeout(timer);
    running.delete(key);
    requeue(key);
    if (!exiting) pump();
  };
  child.on("error", end);
  child.on("close", end);
  child.stdin.on("error", () => {});
  child.stdin.end(line, () => {
    head.written = true;
  });
}

// A session whose hook is done takes its next turn after the sessions waiting already.
function requeue(key) {
  if (waiting.has(key)) ready.set(key, true);
}

function pump() {
  while (running.size < RUNNING_LIMIT) {
    if (dropped && !running.has(NOTE)) {
      start(NOTE, note());
      continue;
    }
    const next = ready.keys().next();
    if (next.done) return;
    const key = next.value;
    ready.delete(key);
    start(key, take(key));
  }
}

// The hook logs an event its dialect does not map as `Event: NAME`: the count goes in the name.
function note() {
  const what = dropped === 1 ? "envelope" : "envelopes";
  const line = JSON.stringify({ hook_event_name: `sciontool-bridge dropped ${dropped} ${what} (queue full)` });
  dropped = 0;
  return line;
}

function take(key) {
  const queue = waiting.get(key);
  const line = queue.shift();
  if (!queue.length) {
    waiting.delete(key);
    ready.delete(key);
  }
  queued -= 1;
  queuedChars -= line.length;
  return line;
}

function longest() {
  let found;
  for (const [key, queue] of waiting) if (found === undefined || queue.length > waiting.get(found).length) found = key;
  return found;
}

function enqueue(envelope) {
  const key = envelope.session_id || "";
  let line;
  try {
    line = JSON.stringify(envelope);
  } catch {
    // a value JSON cannot hold (a BigInt among a tool's arguments): dropped, never thrown at
    // opencode, which would take a throw from tool.execute.before for a veto of the call
  }
  if (line === undefined || line.length > QUEUE_CHARS) dropped += 1;
  else {
    let queue = waiting.get(key);
    if (!queue) waiting.set(key, (queue = []));
    if (queue.length >= SESSION_LIMIT) {
      take(key);
      dropped += 1;
    }
    queue.push(line);
    queued += 1;
    queuedChars += line.length;
    while (queued > QUEUE_LIMIT || queuedChars > QUEUE_CHARS) {
      take(longest());
      dropped += 1;
    }
    if (waiting.has(key) && !running.has(key)) ready.set(key, true);
  }
  if (!exiting) pump();
}

const started = new Set(); // sessions that had a session.created in this process

function send(envelope) {
  if (!FORWARD.has(envelope.hook_event_name)) return;
  const id = envelope.session_id;
  // A session taken up again (`opencode run --continue`, one picked in the TUI) publishes no
  // session.created here; without one, the session the last exit ended would stay ended.
  if (id && !started.has(id)) {
    keep(started, id);
    const name = envelope.hook_event_name;
    if (name !== "session.created" && name !== "server.instance.disposed") send(base("session.created", id));
  }
  enqueue(envelope);
}

// opencode ends with process.exit() (`opencode run` right after the last session.idle): no
// child started after that, and nothing asynchronous runs. So on exit the envelopes still
// queued go, in order, to ONE detached shell that outlives opencode: it waits (at most
// TIMEOUT_MS) for the hooks still running, then feeds the hook one envelope a line. opencode
// waits only for that one spawn. The envelopes reach the shell as its stdin, a file unlinked
// at once, so nothing is left behind. A hook that has ended stays a zombie of opencode while
// opencode's process winds down (1.4 s seen): where /proc tells, that counts as ended.
const HANDOFF = `
for pid in $HOOK_PIDS; do
  n=0
  while kill -0 "$pid" 2>/dev/null && [ "$n" -lt ${TIMEOUT_MS / 100} ]; do
    stat=
    read -r stat < "/proc/$pid/stat" 2>/dev/null
    case "\${stat##*) }" in Z*) break ;; esac
    sleep 0.1
    n=$((n + 1))
  done
done
while IFS= read -r line; do printf '%s' "$line" | "$@"; done
`;

function handOff() {
  const pids = [];
  const lines = [];
  const sessions = new Map(); // session id -> its lines, in order
  for (const [key, head] of running) {
    // A hook that has its envelope whole finishes on its own; one that has not is stopped,
    // and its envelope goes again, before the rest of its session's.
    if (head.written) pids.push(head.child.pid);
    else {
      head.child.kill("SIGKILL");
      if (key === NOTE) lines.push(head.line);
      else sessions.set(key, [head.line]);
    }
  }
  for (const [key, queue] of waiting) sessions.set(key, [...(sessions.get(key) || []), ...queue]);
  if (dropped) lines.push(note());
  for (const group of sessions.values()) lines.push(...group);
  waiting.clear();
  ready.clear();
  if (!lines.length) return;
  let folder;
  let fd;
  try {
    folder = mkdtempSync(join(tmpdir(), "sciontool-bridge-"));
    const file = join(folder, "envelopes");
    writeFileSync(file, lines.join("\n") + "\n", { mode: 0o600 });
    fd = openSync(file, "r");
    rmSync(folder, { recursive: true, force: true });
    folder = undefined;
    const child = spawn("sh", ["-c", HANDOFF, "sh", ...COMMAND], {
      stdio: [fd, "ignore", "ignore"],
      detached: true,
      env: { ...process.env, HOOK_PIDS: pids.join(" ") },
    });
    child.on("error", () => {});
    child.unref();
  } catch {
    // the hook only observes: opencode's exit goes on
  } finally {
    if (fd !== undefined) closeSync(fd);
    if (folder) rmSync(folder, { recursive: true, force: true });
  }
}

process.on("exit", () => {
  exiting = true;
  for (const ending of endings) ending();
  handOff();
});

// The TUI runs plugins in a worker thread, which /exit ends with no `exit` event and no instance
// disposal (nothing at all reaches the plugin). So once a root session is known, one detached
// `sh` holds the read end of a pipe only opencode's process writes to: however the process ends
// (exit, /exit, a signal, SIGKILL), the kernel closes the pipe, and the shell, reading EOF, sends
// the instance's disposal. It is stopped when the disposal went another way (published on the
// bus, or sent by the `exit` hand-off above). It waits on a read: no polling, no output.
const WATCH = `while read -r _; do :; done; printf '%s' "$SCIONTOOL_BRIDGE_ENDING" | "$@"`;

function watchExit(envelope) {
  try {
    const child = spawn("sh", ["-c", WATCH, "sh", ...COMMAND], {
      stdio: ["pipe", "ignore", "ignore"],
      detached: true,
      env: { ...process.env, SCIONTOOL_BRIDGE_ENDING: JSON.stringify(envelope) },
    });
    let exited = false;
    child.on("exit", () => {
      exited = true;
    });
    child.on("error", () => {});
    child.stdin.on("error", () => {});
    // Neither the shell nor its pipe may keep opencode's event loop alive.
    child.unref();
    if (typeof child.stdin.unref === "function") child.stdin.unref();
    // Only a shell not seen exiting is stopped: once it has, its pid may be another process's.
    return () => {
      if (!exited) child.kill("SIGKILL");
    };
  } catch {
    return () => {}; // the hook only observes: no watcher, no disposal on a silent exit
  }
}

function base(name, sessionID) {
  const envelope = { hook_event_name: name };
  if (sessionID) envelope.session_id = sessionID;
  return envelope;
}

function clip(text) {
  return typeof text === "string" && text.length > TEXT_LIMIT ? text.slice(0, TEXT_LIMIT) : text;
}

function errorText(error) {
  if (!error) return "";
  if (typeof error === "string") return error;
  const data = error.data || {};
  return String(data.message || error.message || error.name || "error");
}

function stepFinish(part, model) {
  const tokens = part.tokens || {};
  const cache = tokens.cache || {};
  const envelope = base("message.part.updated.step-finish", part.sessionID);
  if (model) envelope.model = model;
  envelope.input_tokens = tokens.input || 0;
  // opencode counts reasoning apart from output; Scion's output_tokens include it.
  envelope.output_tokens = (tokens.output || 0) + (tokens.reasoning || 0);
  if (tokens.reasoning) envelope.reasoning_tokens = tokens.reasoning;
  if (cache.read) envelope.cached_tokens = cache.read;
  if (cache.write) envelope.cache_write_tokens = cache.write;
  return envelope;
}

export const SciontoolBridge = async () => {
  const models = new Map(); // assistant message id -> "provider/model"
  const users = new Set(); // user message ids whose prompt is not sent yet
  const texts = new Map(); // session id -> the last assistant text of the turn
  const calls = new Map(); // call id -> {tool, input}
  const failed = new Set(); // call ids already ended by a failure
  const asked = new Map(); // permission request id -> call id, until replied
  let root = ""; // the first session seen, but a child's: the one instance disposal ends
  let disposed = false;
  let unwatch = () => {};
  // `opencode run` exits without publishing the instance's disposal: the exit stands for it.
  endings.add(() => {
    unwatch();
    if (root && !disposed) send(base("server.instance.disposed", root));
  });

  function part(p) {
    if (p.type === "step-finish") return send(stepFinish(p, models.get(p.messageID)));
    if (p.type === "text" && users.has(p.messageID) && !p.synthetic) {
      users.delete(p.messageID);
      const envelope = base("message.updated.user", p.sessionID);
      if (p.text) envelope.prompt = clip(p.text);
      return send(envelope);
    }
    if (p.type === "text" && models.has(p.messageID) && p.text && p.time && p.time.end) {
      keep(texts, p.sessionID, p.text);
      return;
    }
    const state = p.state || {};
    // A tool that throws or is rejected gets no tool.execute.after: its part says so.
    if (p.type === "tool" && state.status === "error" && !failed.has(p.callID)) {
      keep(failed, p.callID);
      calls.delete(p.callID);
      const envelope = base("tool.failed", p.sessionID);
      envelope.call_id = p.callID;
      envelope.tool_name = p.tool;
      envelope.tool_input = state.input || {};
      envelope.success = false;
      envelope.error = errorText(state.error) || "tool failed";
      return send(envelope);
    }
  }

  return {
    event: async ({ event }) => {
      const props = event.properties || {};
      const info = props.info || {};
      const created = event.type === "session.created";
      if (!root && !(created && info.parentID)) {
        root = props.sessionID || (created ? info.id : info.sessionID) || "";
        if (root && !disposed) unwatch = watchExit(base("server.instance.disposed", root));
      }
      switch (event.type) {
        case "session.created": {
          return send(base("session.created", props.sessionID || info.id));
        }
        case "message.updated": {
          if (info.role === "user" && info.id && !info.summary) keep(users, info.id);
          if (info.role === "assistant" && info.modelID) keep(models, info.id, `${info.providerID}/${info.modelID}`);
          return;
        }
        case "message.part.updated":
          return props.part ? part(props.part) : undefined;
        case "session.error": {
          const envelope = base("session.error", props.sessionID);
          envelope.error = errorText(props.error) || "session error";
          return send(envelope);
        }
        case "session.idle": {
          const envelope = base("session.idle", props.sessionID);
          const text = texts.get(props.sessionID);
          texts.delete(props.sessionID);
          if (text) envelope.assistant_text = clip(text);
          return send(envelope);
        }
        case "server.instance.disposed":
          disposed = true;
          unwatch();
          return send(base("server.instance.disposed", root));
        case "session.status": {
          // A failed request opencode tries again later: the request is over, with its error.
          const status = props.status || {};
          if (status.type !== "retry") return;
          const envelope = base("session.status.retry", props.sessionID);
          envelope.error = String(status.message || "model request failed");
          if (typeof status.attempt === "number") envelope.attempt = status.attempt;
          return send(envelope);
        }
        case "permission.asked": {
          const envelope = base("permission.asked", props.sessionID);
          const callID = (props.tool && props.tool.callID) || "";
          // permission.replied names only the request: which call it answers is known from here.
          if (props.id && callID) keep(asked, props.id, callID);
          const call = calls.get(callID);
          if (call) envelope.tool_name = call.tool;
          if (typeof props.title === "string") envelope.message = props.title;
          else if (typeof props.permission === "string") envelope.message = `Permission required: ${props.permission}`;
          return send(envelope);
        }
        case "permission.replied": {
          // Approved: the tool runs now. Rejected: its part ends in an error (tool.failed).
          const callID = asked.get(props.requestID) || (props.tool && props.tool.callID) || "";
          asked.delete(props.requestID);
          if (props.reply === "reject" || props.response === "reject") return;
          const call = calls.get(callID);
          // A call not seen starting would stay open for ever: its end (tool.execute.after) ends
          // the wait instead.
          if (!call) return;
          const envelope = base("permission.replied", props.sessionID);
          envelope.call_id = callID;
          envelope.tool_name = call.tool;
          envelope.tool_input = call.input;
          return send(envelope);
        }
      }
    },
    // Called right before each model request, whose step opencode publishes only once the answer
    // streams in. The title of a new session is a request of its own, beside the turn.
    "chat.params": async (input) => {
      if (!input || SIDE_AGENTS.has(input.agent)) return;
      const envelope = base("chat.params", input.sessionID);
      const model = input.model || {};
      if (model.providerID && model.id) envelope.model = `${model.providerID}/${model.id}`;
      send(envelope);
    },
    "tool.execute.before": async (input, output) => {
      const args = (output && output.args) || {};
      keep(calls, input.callID, { tool: input.tool, input: args });
      const envelope = base("tool.execute.before", input.sessionID);
      envelope.call_id = input.callID;
      envelope.tool_name = input.tool;
      envelope.tool_input = args;
      send(envelope);
    },
    "tool.execute.after": async (input, output) => {
      if (failed.has(input.callID)) return;
      const call = calls.get(input.callID);
      calls.delete(input.callID);
      const metadata = (output && output.metadata) || {};
      const envelope = base("tool.execute.after", input.sessionID);
      envelope.call_id = input.callID;
      envelope.tool_name = input.tool;
      envelope.tool_input = (call && call.input) || input.args || {};
      // bash reports its exit status; other tools fail by throwing (tool.failed above).
      envelope.success = !metadata.error && !(typeof metadata.exit === "number" && metadata.exit !== 0);
      if (typeof metadata.exit === "number" && metadata.exit !== 0) envelope.error = `exit status ${metadata.exit}`;
      if (output && typeof output.output === "string") envelope.tool_output = clip(output.output);
      send(envelope);
    },
  };
};
