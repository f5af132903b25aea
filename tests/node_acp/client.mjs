// An ACP client written with the official TypeScript SDK (@agentclientprotocol/sdk, pinned in
// package.json), driving the real `mm -acp` whose command line it is given:
//
//     node tests/node_acp/client.mjs python -m mm_tui.cli -acp --base-url URL --model m1
//
// First process: initialize (asking protocolVersion 0), session/new, session/list. Second
// process: initialize, session/list, session/load of the first one's session, session/prompt
// "hi". It prints one JSON object with what it saw on stdout and exits 1 on any error (stderr
// says which). The session's folder is the current directory; mm's stderr is this one's.
//
// Validation: the SDK parses the params of what the agent sends (session/update) with its zod
// schemas, but a notification that fails is only logged and dropped, responses are not checked,
// and its schemas quietly repair what they can (an invalid field becomes its default, an invalid
// list entry is skipped). SDK 2.4.0 has no strict option, so every message mm sends is checked
// here with the same schemas the SDK's stable v1 entrypoint uses, and anything the parse would
// reject, drop or change is an error ("strict").

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

// The stable v1 entrypoint's own validators (not an export of the package: imported by path).
const zod = await import(
  new URL("./node_modules/@agentclientprotocol/sdk/dist/v1/schema/zod.gen.js", import.meta.url)
);

const RESPONSE_SCHEMAS = {
  initialize: zod.zInitializeResponse,
  "session/new": zod.zNewSessionResponse,
  "session/list": zod.zListSessionsResponse,
  "session/load": zod.zLoadSessionResponse,
  "session/prompt": zod.zPromptResponse,
};
const NOTIFICATION_SCHEMAS = { "session/update": zod.zSessionNotification };
const TIMEOUT_MS = 60_000;

const argv = process.argv.slice(2);
if (argv.length === 0) {
  console.error("usage: node client.mjs MM_COMMAND [ARGS...]");
  process.exit(2);
}
const cwd = process.cwd();
const problems = []; // what the SDK's schemas refused or would have changed

// Paths where `parsed` does not keep what `raw` holds: a key dropped, a value replaced, a list
// entry skipped. Keys the parse added (defaults for absent optional fields) are not losses.
function losses(raw, parsed, path = "$") {
  if (Array.isArray(raw)) {
    if (!Array.isArray(parsed) || parsed.length !== raw.length) {
      return [`${path}: list of ${raw.length} became ${JSON.stringify(parsed)}`];
    }
    return raw.flatMap((item, i) => losses(item, parsed[i], `${path}[${i}]`));
  }
  if (raw !== null && typeof raw === "object") {
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      return [`${path}: became ${JSON.stringify(parsed)}`];
    }
    return Object.keys(raw).flatMap((key) =>
      key in parsed
        ? losses(raw[key], parsed[key], `${path}.${key}`)
        : [`${path}.${key}: dropped (${JSON.stringify(raw[key])})`],
    );
  }
  return Object.is(raw, parsed)
    ? []
    : [`${path}: ${JSON.stringify(raw)} became ${JSON.stringify(parsed)}`];
}

// A zod error in a few lines: of a union, the alternative that came closest (fewest issues).
function describe(issues, path = []) {
  return issues.flatMap((issue) => {
    const where = [...path, ...issue.path];
    if (issue.code === "invalid_union" && issue.errors?.length) {
      const closest = issue.errors.reduce((a, b) => (b.length < a.length ? b : a));
      return describe(closest, where);
    }
    const at = where.map((key) => (typeof key === "number" ? `[${key}]` : `.${key}`));
    return [`$${at.join("")}: ${issue.message}`];
  });
}

function check(what, schema, value) {
  if (!schema) {
    problems.push(`${what}: no schema for it in the SDK`);
    return;
  }
  const result = schema.safeParse(value);
  if (!result.success) {
    problems.push(`${what}: rejected: ${describe(result.error.issues).join("; ")}`);
    return;
  }
  for (const loss of losses(value, result.data)) problems.push(`${what}: ${loss}`);
}

// One `mm -acp`: its stdio as an SDK stream, each message mm sends checked on the way in.
function startAgent(label) {
  const child = spawn(argv[0], argv.slice(1), { cwd, stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) =>
    child.on("exit", (code, signal) => resolve(signal ?? code)),
  );
  const spawnError = new Promise((_, reject) => child.on("error", reject));
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const methodOf = new Map(); // request id -> method, of the requests this client sent
  const wire = []; // the session/update notifications mm sent, as they arrived
  const outgoing = new TransformStream({
    transform(message, controller) {
      if ("method" in message && "id" in message) methodOf.set(message.id, message.method);
      controller.enqueue(message);
    },
  });
  void outgoing.readable.pipeTo(stream.writable).catch(() => {});
  const incoming = stream.readable.pipeThrough(
    new TransformStream({
      transform(message, controller) {
        if ("method" in message && !("id" in message)) {
          check(`${label} ${message.method}`, NOTIFICATION_SCHEMAS[message.method], message.params);
          if (message.method === "session/update") wire.push(message.params);
        } else if ("method" in message) {
          problems.push(`${label}: mm asked ${message.method}, which this client does not offer`);
        } else if ("result" in message) {
          const method = methodOf.get(message.id);
          check(`${label} ${method} response`, RESPONSE_SCHEMAS[method], message.result);
        }
        controller.enqueue(message);
      },
    }),
  );
  return {
    child,
    exited,
    spawnError,
    wire,
    stream: { writable: outgoing.writable, readable: incoming },
  };
}

// The client app: session/update notifications as the SDK hands them over, after its parse.
function clientApp(received) {
  return acp.client({ name: "mm-node-acp-test" }).onNotification(
    acp.methods.client.session.update,
    ({ params }) => {
      received.push(params);
    },
  );
}

const CLIENT_CAPABILITIES = { fs: { readTextFile: false, writeTextFile: false }, terminal: false };

async function run(label, received, op) {
  const agent = startAgent(label);
  try {
    const result = await Promise.race([
      clientApp(received).connectWith(agent.stream, op),
      agent.spawnError,
      agent.exited.then((how) => {
        throw new Error(`${label}: mm exited (${how}) before the client was done`);
      }),
    ]);
    // Notifications read before the last answer reach the handler a few ticks after it.
    await new Promise((resolve) => setImmediate(resolve));
    return { result, wire: agent.wire };
  } finally {
    agent.child.stdin.destroy(); // end of input: mm saves and exits
    const timer = setTimeout(() => agent.child.kill("SIGKILL"), 10_000);
    const how = await agent.exited;
    clearTimeout(timer);
    if (how !== 0) problems.push(`${label}: mm exited with ${how} after its input closed`);
  }
}

async function main() {
  const first = [];
  const one = await run("first", first, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: 0,
      clientCapabilities: CLIENT_CAPABILITIES,
    });
    const created = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    const listed = await ctx.request(acp.methods.agent.session.list, { cwd });
    return { init, created, listed };
  });
  const sessionId = one.result.created.sessionId;

  const second = [];
  let loadUpdates = 0;
  const two = await run("second", second, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: CLIENT_CAPABILITIES,
    });
    const listed = await ctx.request(acp.methods.agent.session.list, { cwd });
    const loaded = await ctx.request(acp.methods.agent.session.load, {
      sessionId,
      cwd,
      mcpServers: [],
    });
    await new Promise((resolve) => setImmediate(resolve));
    loadUpdates = second.length;
    const prompted = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "hi" }],
    });
    return { init, listed, loaded, prompted };
  });

  const promptUpdates = second.slice(loadUpdates);
  const text = promptUpdates
    .filter((n) => n.update.sessionUpdate === "agent_message_chunk")
    .map((n) => (n.update.content.type === "text" ? n.update.content.text : ""))
    .join("");
  const ids = (listed) => listed.sessions.map((s) => s.sessionId);
  const kinds = (notifications) => notifications.map((n) => n.update.sessionUpdate);
  const report = {
    sdkProtocolVersion: acp.PROTOCOL_VERSION,
    askedProtocolVersion: 0,
    protocolVersion: one.result.init.protocolVersion,
    secondProtocolVersion: two.result.init.protocolVersion,
    agentCapabilities: one.result.init.agentCapabilities,
    agentInfo: one.result.init.agentInfo ?? null,
    sessionId,
    listedBeforePrompt: ids(one.result.listed),
    listedBySecond: ids(two.result.listed),
    loaded: two.result.loaded,
    stopReason: two.result.prompted.stopReason,
    text,
    updateKinds: {
      first: kinds(first),
      load: kinds(second.slice(0, loadUpdates)),
      prompt: kinds(promptUpdates),
    },
    updatesOnTheWire: one.wire.length + two.wire.length,
    updatesTheSdkAccepted: first.length + second.length,
    sessionIdsOfUpdates: [...new Set([...first, ...second].map((n) => n.sessionId))],
    problems,
  };
  console.log(JSON.stringify(report));
  if (report.updatesOnTheWire !== report.updatesTheSdkAccepted) {
    throw new Error("the SDK dropped session/update notifications (see its log on stderr)");
  }
  if (problems.length > 0) throw new Error(`messages the SDK's schemas refused or changed`);
}

const timeout = setTimeout(() => {
  console.error(`no end after ${TIMEOUT_MS / 1000} s`);
  process.exit(1);
}, TIMEOUT_MS);
try {
  await main();
} catch (error) {
  console.error(error?.stack ?? error);
  for (const problem of problems) console.error(`problem: ${problem}`);
  process.exitCode = 1;
} finally {
  clearTimeout(timeout);
}
