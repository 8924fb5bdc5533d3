// sciontool-bridge: written by `sciontool harness install opencode`; `sciontool harness uninstall
// opencode` removes it. It turns opencode's bus events and tool hooks into JSON envelopes (the bus
// type in hook_event_name) and pipes each to Scion's hook.
import { spawnSync } from "node:child_process";

const COMMAND = __COMMAND__;
// The names the opencode dialect maps when this file was written; others are not sent.
const FORWARD = new Set(__FORWARD__);
const TIMEOUT_MS = 30000;

// Synchronous, as other harnesses run their hooks: the events stay in order, and the last one
// (session.idle) is delivered before `opencode run` exits. A failing hook never breaks opencode.
function send(envelope) {
  if (!FORWARD.has(envelope.hook_event_name)) return;
  try {
    spawnSync(COMMAND[0], COMMAND.slice(1), {
      input: JSON.stringify(envelope),
      stdio: ["pipe", "ignore", "inherit"],
      timeout: TIMEOUT_MS,
    });
  } catch {
    // the hook only observes
  }
}

function base(name, sessionID) {
  const envelope = { hook_event_name: name };
  if (sessionID) envelope.session_id = sessionID;
  return envelope;
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
  const models = new Map(); // message id -> "provider/model"
  const inputs = new Map(); // tool call id -> its arguments
  return {
    event: async ({ event }) => {
      const props = event.properties || {};
      if (event.type === "message.updated" && props.info && props.info.modelID) {
        models.set(props.info.id, `${props.info.providerID}/${props.info.modelID}`);
      }
      if (event.type === "message.part.updated" && props.part && props.part.type === "step-finish") {
        return send(stepFinish(props.part, models.get(props.part.messageID)));
      }
      const envelope = base(event.type, props.sessionID || (props.info && props.info.sessionID));
      if (props.part && props.part.type === "tool") {
        envelope.tool_name = props.part.tool;
        envelope.tool_input = (props.part.state && props.part.state.input) || {};
      }
      if (event.type.startsWith("permission.") && typeof props.title === "string") {
        envelope.message = props.title;
      }
      return send(envelope);
    },
    "tool.execute.before": async (input, output) => {
      const args = (output && output.args) || {};
      inputs.set(input.callID, args);
      const envelope = base("tool.execute.before", input.sessionID);
      envelope.tool_name = input.tool;
      envelope.tool_input = args;
      return send(envelope);
    },
    "tool.execute.after": async (input, output) => {
      const envelope = base("tool.execute.after", input.sessionID);
      envelope.tool_name = input.tool;
      envelope.success = !(output && output.metadata && output.metadata.error);
      envelope.tool_input = inputs.get(input.callID) || input.args || {};
      inputs.delete(input.callID);
      return send(envelope);
    },
  };
};
