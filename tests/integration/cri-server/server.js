#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
//
// A CRI runtime (runtime.v1.RuntimeService) for cubelet's tests, on a real
// gRPC stack: @grpc/grpc-js and @grpc/proto-loader, loading cubelet's own
// runtime/cri/api.proto. Nothing runs: the containers are an in-memory state
// the test sets, and GetContainerEvents streams whatever the test tells it to.
//
//   node server.js PROTO SOCKET
//
// It listens on the unix socket SOCKET (an existing socket file is replaced)
// and prints one JSON line on stdout once it does:
//   {"ready":true,"socket":"...","pid":N,"grpc_js":"1.14.7"}
// Then it reads commands, one JSON object per line, on stdin and answers each
// with one JSON line on stdout, in order: {"ok":true,...} or
// {"ok":false,"error":"..."}. A command's "id", if any, is echoed. EOF on stdin
// (the test died or closed the pipe) shuts the server down. Logs go to stderr.
// README.md lists the commands.
'use strict';

const fs = require('fs');
const path = require('path');
const readline = require('readline');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const GRPC_JS_VERSION = require('@grpc/grpc-js/package.json').version;

function log(...args) {
  const t = new Date().toISOString().slice(11, 23);
  process.stderr.write(`[cri-server ${t}] ${args.join(' ')}\n`);
}

function usage() {
  process.stderr.write('usage: node server.js PROTO SOCKET\n');
  process.exit(2);
}

const [protoPath, socketPath] = process.argv.slice(2);
if (!protoPath || !socketPath || process.argv.length !== 4) usage();

// keepCase: field names as in api.proto (snake_case). int64 as decimal
// strings both ways (nanosecond timestamps do not fit a double). Enums as
// their names. defaults: absent fields read as their zero value, absent
// messages as null, which is how "no filter" is told from a filter.
const packageDefinition = protoLoader.loadSync(path.resolve(protoPath), {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});
const proto = grpc.loadPackageDefinition(packageDefinition).runtime.v1;

const LABEL_POD_NAME = 'io.kubernetes.pod.name';
const LABEL_POD_NAMESPACE = 'io.kubernetes.pod.namespace';
const LABEL_POD_UID = 'io.kubernetes.pod.uid';
const LABEL_CONTAINER_NAME = 'io.kubernetes.container.name';

const CONTAINER_STATES = ['CONTAINER_CREATED', 'CONTAINER_RUNNING', 'CONTAINER_EXITED', 'CONTAINER_UNKNOWN'];
const SANDBOX_STATES = ['SANDBOX_READY', 'SANDBOX_NOTREADY'];
const EVENT_TYPES = [
  'CONTAINER_CREATED_EVENT',
  'CONTAINER_STARTED_EVENT',
  'CONTAINER_STOPPED_EVENT',
  'CONTAINER_DELETED_EVENT',
];

// ---------------------------------------------------------------------------
// State

class CommandError extends Error {}

// A nanosecond timestamp from JSON (number or decimal string) as a decimal string.
function ns(v, what) {
  if (v === undefined || v === null) return '0';
  if (typeof v === 'number' && !Number.isSafeInteger(v))
    throw new CommandError(`${what}: ${v} is not an exact integer; pass nanoseconds as a string`);
  if (typeof v !== 'number' && typeof v !== 'string')
    throw new CommandError(`${what}: expected a number or a decimal string`);
  try {
    return BigInt(v).toString();
  } catch (e) {
    throw new CommandError(`${what}: "${v}" is not an integer`);
  }
}

function oneOf(v, allowed, dflt, what) {
  if (v === undefined || v === null) return dflt;
  if (!allowed.includes(v)) throw new CommandError(`${what}: "${v}" is not one of ${allowed.join(', ')}`);
  return v;
}

function str(v, what, dflt) {
  if (v === undefined || v === null) {
    if (dflt !== undefined) return dflt;
    throw new CommandError(`${what} is required`);
  }
  if (typeof v !== 'string') throw new CommandError(`${what}: expected a string`);
  return v;
}

function labelMap(v, what) {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw new CommandError(`${what}: expected an object`);
  const out = {};
  for (const [k, x] of Object.entries(v)) out[k] = str(x, `${what}.${k}`);
  return out;
}

// A pod of the JSON state, normalised:
// {uid, name, namespace, ip, sandboxes: [...], containers: [...]}
function parsePod(p, where) {
  if (!p || typeof p !== 'object' || Array.isArray(p)) throw new CommandError(`${where}: expected a pod object`);
  const uid = str(p.uid, `${where}.uid`);
  const pod = {
    uid,
    name: str(p.name, `${where}.name`, uid),
    namespace: str(p.namespace, `${where}.namespace`, 'default'),
    sandboxes: [],
    containers: [],
  };
  let sbs = p.sandboxes;
  if (sbs === undefined && p.sandbox !== undefined) sbs = [p.sandbox];
  if (!Array.isArray(sbs) || sbs.length === 0) throw new CommandError(`${where}: a pod needs "sandbox" or "sandboxes"`);
  sbs.forEach((s, i) => {
    const w = `${where}.sandboxes[${i}]`;
    if (!s || typeof s !== 'object') throw new CommandError(`${w}: expected an object`);
    pod.sandboxes.push({
      id: str(s.id, `${w}.id`),
      attempt: s.attempt | 0,
      state: oneOf(s.state, SANDBOX_STATES, 'SANDBOX_READY', `${w}.state`),
      created_at: ns(s.created_at, `${w}.created_at`),
      ip: str(s.ip, `${w}.ip`, str(p.ip, `${where}.ip`, '')),
      additional_ips: (s.additional_ips || []).map((x, k) => str(x, `${w}.additional_ips[${k}]`)),
      labels: labelMap(s.labels, `${w}.labels`),
      annotations: labelMap(s.annotations, `${w}.annotations`),
    });
  });
  (p.containers || []).forEach((c, i) => {
    const w = `${where}.containers[${i}]`;
    if (!c || typeof c !== 'object') throw new CommandError(`${w}: expected an object`);
    const sandbox = str(c.sandbox, `${w}.sandbox`, pod.sandboxes[0].id);
    if (!pod.sandboxes.some((s) => s.id === sandbox)) throw new CommandError(`${w}.sandbox: no sandbox "${sandbox}" in this pod`);
    pod.containers.push({
      id: str(c.id, `${w}.id`),
      sandbox,
      name: str(c.name, `${w}.name`, c.id),
      attempt: c.attempt | 0,
      state: oneOf(c.state, CONTAINER_STATES, 'CONTAINER_RUNNING', `${w}.state`),
      created_at: ns(c.created_at, `${w}.created_at`),
      started_at: ns(c.started_at, `${w}.started_at`),
      finished_at: ns(c.finished_at, `${w}.finished_at`),
      exit_code: c.exit_code | 0,
      image: str(c.image, `${w}.image`, 'localhost/cubelet/busybox:1'),
      image_ref: str(c.image_ref, `${w}.image_ref`, ''),
      reason: str(c.reason, `${w}.reason`, ''),
      message: str(c.message, `${w}.message`, ''),
      labels: labelMap(c.labels, `${w}.labels`),
      annotations: labelMap(c.annotations, `${w}.annotations`),
    });
  });
  return pod;
}

const state = {
  pods: new Map(), // uid -> pod, in insertion order
  streams: new Set(), // open GetContainerEvents calls
  refuse: 0, // refuse this many stream opens more (-1: all)
  refuseCode: grpc.status.UNAVAILABLE,
  unimplemented: false,
  calls: {}, // method -> count
  streamOpens: 0, // GetContainerEvents calls, refused ones included
  streamsAccepted: 0,
  streamsRefused: 0,
  eventsSent: 0,
};

function* allSandboxes() {
  for (const pod of state.pods.values()) for (const s of pod.sandboxes) yield [pod, s];
}

function* allContainers() {
  for (const pod of state.pods.values()) for (const c of pod.containers) yield [pod, c];
}

function findSandbox(id) {
  for (const [pod, s] of allSandboxes()) if (s.id === id) return [pod, s];
  return [null, null];
}

function findContainer(id) {
  for (const [pod, c] of allContainers()) if (c.id === id) return [pod, c];
  return [null, null];
}

function podLabels(pod) {
  return { [LABEL_POD_NAME]: pod.name, [LABEL_POD_NAMESPACE]: pod.namespace, [LABEL_POD_UID]: pod.uid };
}

function sandboxLabels(pod, s) {
  return Object.assign(podLabels(pod), s.labels);
}

function containerLabels(pod, c) {
  return Object.assign(podLabels(pod), { [LABEL_CONTAINER_NAME]: c.name }, c.labels);
}

function sandboxMetadata(pod, s) {
  return { name: pod.name, uid: pod.uid, namespace: pod.namespace, attempt: s.attempt };
}

// PodSandbox (ListPodSandbox item)
function sandboxItem(pod, s) {
  return {
    id: s.id,
    metadata: sandboxMetadata(pod, s),
    state: s.state,
    created_at: s.created_at,
    labels: sandboxLabels(pod, s),
    annotations: s.annotations,
    runtime_handler: '',
  };
}

// PodSandboxStatus
function sandboxStatus(pod, s, { noMetadata = false } = {}) {
  return {
    id: s.id,
    metadata: noMetadata ? null : sandboxMetadata(pod, s),
    state: s.state,
    created_at: s.created_at,
    network: { ip: s.ip, additional_ips: s.additional_ips.map((ip) => ({ ip })) },
    labels: sandboxLabels(pod, s),
    annotations: s.annotations,
    runtime_handler: '',
  };
}

// Container (ListContainers item)
function containerItem(pod, c) {
  return {
    id: c.id,
    pod_sandbox_id: c.sandbox,
    metadata: { name: c.name, attempt: c.attempt },
    image: { image: c.image },
    image_ref: c.image_ref,
    state: c.state,
    created_at: c.created_at,
    labels: containerLabels(pod, c),
    annotations: c.annotations,
  };
}

// ContainerStatus
function containerStatus(pod, c) {
  return {
    id: c.id,
    metadata: { name: c.name, attempt: c.attempt },
    state: c.state,
    created_at: c.created_at,
    started_at: c.started_at,
    finished_at: c.finished_at,
    exit_code: c.exit_code,
    image: { image: c.image },
    image_ref: c.image_ref,
    reason: c.reason,
    message: c.message,
    labels: containerLabels(pod, c),
    annotations: c.annotations,
    log_path: '',
  };
}

function labelsMatch(labels, selector) {
  for (const [k, v] of Object.entries(selector || {})) if (labels[k] !== v) return false;
  return true;
}

// ---------------------------------------------------------------------------
// RuntimeService

function count(method) {
  state.calls[method] = (state.calls[method] || 0) + 1;
}

function grpcError(code, details) {
  return { code, details };
}

function unary(method, fn) {
  return (call, callback) => {
    count(method);
    let resp;
    try {
      resp = fn(call.request);
    } catch (e) {
      if (e && typeof e.code === 'number') return callback(e);
      log(`${method}: ${e && e.stack}`);
      return callback(grpcError(grpc.status.INTERNAL, String(e)));
    }
    callback(null, resp);
  };
}

function getContainerEvents(call) {
  count('GetContainerEvents');
  state.streamOpens++;
  if (state.unimplemented) {
    state.streamsRefused++;
    log('GetContainerEvents: answering UNIMPLEMENTED');
    call.emit('error', grpcError(grpc.status.UNIMPLEMENTED, 'unknown method GetContainerEvents for service runtime.v1.RuntimeService'));
    return;
  }
  if (state.refuse !== 0) {
    if (state.refuse > 0) state.refuse--;
    state.streamsRefused++;
    log(`GetContainerEvents: refused (${grpc.status[state.refuseCode]}; ${state.refuse < 0 ? 'all' : state.refuse} more to refuse)`);
    call.emit('error', grpcError(state.refuseCode, 'refused by the test'));
    return;
  }
  state.streamsAccepted++;
  state.streams.add(call);
  // Response headers now: a stream the server accepted is distinguishable on
  // the wire from a refused one (Trailers-Only).
  call.sendMetadata(new grpc.Metadata());
  log(`GetContainerEvents: stream opened (${state.streams.size} open)`);
  const forget = (why) => {
    if (state.streams.delete(call)) log(`GetContainerEvents: stream ${why} (${state.streams.size} open)`);
  };
  call.on('cancelled', () => forget('cancelled by the client'));
  call.on('close', () => forget('closed'));
  call.on('error', () => forget('failed'));
}

const runtimeService = {
  Version: unary('Version', () => ({
    version: '0.1.0',
    runtime_name: 'cubelet-test-cri',
    runtime_version: `grpc-js-${GRPC_JS_VERSION}`,
    runtime_api_version: 'v1',
  })),

  Status: unary('Status', (req) => ({
    status: {
      conditions: [
        { type: 'RuntimeReady', status: true, reason: '', message: '' },
        { type: 'NetworkReady', status: true, reason: '', message: '' },
      ],
    },
    info: req.verbose ? { server: 'cubelet-test-cri' } : {},
  })),

  ListPodSandbox: unary('ListPodSandbox', (req) => {
    const f = req.filter;
    const items = [];
    for (const [pod, s] of allSandboxes()) {
      if (f) {
        if (f.id && f.id !== s.id) continue;
        if (f.state && f.state.state !== s.state) continue;
        if (!labelsMatch(sandboxLabels(pod, s), f.label_selector)) continue;
      }
      items.push(sandboxItem(pod, s));
    }
    return { items };
  }),

  PodSandboxStatus: unary('PodSandboxStatus', (req) => {
    const [pod, s] = findSandbox(req.pod_sandbox_id);
    if (!s) throw grpcError(grpc.status.NOT_FOUND, `an error occurred when try to find sandbox "${req.pod_sandbox_id}": not found`);
    return { status: sandboxStatus(pod, s), info: {}, containers_statuses: [], timestamp: '0' };
  }),

  ListContainers: unary('ListContainers', (req) => {
    const f = req.filter;
    const containers = [];
    for (const [pod, c] of allContainers()) {
      if (f) {
        if (f.id && f.id !== c.id) continue;
        if (f.pod_sandbox_id && f.pod_sandbox_id !== c.sandbox) continue;
        if (f.state && f.state.state !== c.state) continue;
        if (!labelsMatch(containerLabels(pod, c), f.label_selector)) continue;
      }
      containers.push(containerItem(pod, c));
    }
    return { containers };
  }),

  ContainerStatus: unary('ContainerStatus', (req) => {
    const [pod, c] = findContainer(req.container_id);
    if (!c) throw grpcError(grpc.status.NOT_FOUND, `an error occurred when try to find container "${req.container_id}": not found`);
    return { status: containerStatus(pod, c), info: {} };
  }),

  GetContainerEvents: getContainerEvents,
  // Every other method of the service answers UNIMPLEMENTED (grpc-js does
  // that for a method without a handler).
};

// ---------------------------------------------------------------------------
// Commands

function statusCode(name, dflt) {
  if (name === undefined || name === null) return dflt;
  if (typeof name === 'number' && grpc.status[name] !== undefined) return name;
  if (typeof name === 'string' && typeof grpc.status[name] === 'number') return grpc.status[name];
  throw new CommandError(`"${name}" is not a gRPC status code name`);
}

function stats() {
  return {
    open_streams: state.streams.size,
    stream_opens: state.streamOpens,
    streams_accepted: state.streamsAccepted,
    streams_refused: state.streamsRefused,
    refuse_pending: state.refuse,
    unimplemented: state.unimplemented,
    events_sent: state.eventsSent,
    pods: state.pods.size,
    calls: Object.assign({}, state.calls),
  };
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const commands = {
  // {"cmd":"set_state","pods":[POD...]}: replaces the whole state.
  set_state(c) {
    if (!Array.isArray(c.pods)) throw new CommandError('"pods" must be an array');
    const pods = c.pods.map((p, i) => parsePod(p, `pods[${i}]`));
    state.pods = new Map(pods.map((p) => [p.uid, p]));
    return { pods: state.pods.size };
  },

  // {"cmd":"put_pod","pod":POD}: adds or replaces one pod (by uid).
  put_pod(c) {
    const pod = parsePod(c.pod, 'pod');
    state.pods.set(pod.uid, pod);
    return { pods: state.pods.size };
  },

  // {"cmd":"remove_pod","uid":"..."}
  remove_pod(c) {
    const uid = str(c.uid, 'uid');
    return { removed: state.pods.delete(uid), pods: state.pods.size };
  },

  // {"cmd":"event","type":"CONTAINER_STARTED_EVENT","container":"c1",
  //  "created_at":"<ns>","pod":"<uid>"|POD,"sandbox":"<id>",
  //  "malformed":"no_sandbox"|"no_metadata"}
  // Writes one ContainerEventResponse on every open stream. "pod" names a pod
  // of the state or gives one inline (not stored); its sandbox status (the
  // sandbox "sandbox", else the pod's first) and all its container statuses
  // go into the event. "malformed" leaves the sandbox status (no_sandbox) or
  // its metadata (no_metadata) out, as a broken runtime would.
  event(c) {
    const type = oneOf(c.type, EVENT_TYPES, undefined, 'type');
    if (!type) throw new CommandError('"type" is required');
    const created = ns(c.created_at, 'created_at');
    const malformed = oneOf(c.malformed, ['no_sandbox', 'no_metadata'], null, 'malformed');
    let pod;
    if (typeof c.pod === 'string') {
      pod = state.pods.get(c.pod);
      if (!pod) throw new CommandError(`no pod "${c.pod}" in the state`);
    } else {
      pod = parsePod(c.pod, 'pod');
    }
    const sbId = str(c.sandbox, 'sandbox', pod.sandboxes[0].id);
    const sb = pod.sandboxes.find((s) => s.id === sbId);
    if (!sb) throw new CommandError(`pod "${pod.uid}" has no sandbox "${sbId}"`);
    const msg = {
      container_id: str(c.container, 'container'),
      container_event_type: type,
      created_at: created,
      pod_sandbox_status: malformed === 'no_sandbox' ? null : sandboxStatus(pod, sb, { noMetadata: malformed === 'no_metadata' }),
      containers_statuses: pod.containers.map((x) => containerStatus(pod, x)),
    };
    let n = 0;
    for (const call of state.streams) {
      call.write(msg);
      n++;
    }
    state.eventsSent += n;
    log(`event ${type} container=${msg.container_id} pod=${pod.uid} created_at=${created}${malformed ? ` malformed=${malformed}` : ''} -> ${n} stream(s)`);
    return { streams: n };
  },

  // {"cmd":"drop","code":"UNAVAILABLE","message":"..."}: ends every open
  // stream with that status ("OK" ends them normally).
  drop(c) {
    const code = statusCode(c.code, grpc.status.UNAVAILABLE);
    const message = str(c.message, 'message', 'stream dropped by the test');
    const calls = [...state.streams];
    state.streams.clear();
    for (const call of calls) {
      if (code === grpc.status.OK) call.end();
      else call.emit('error', grpcError(code, message));
    }
    log(`dropped ${calls.length} stream(s) with ${grpc.status[code]}`);
    return { dropped: calls.length };
  },

  // {"cmd":"refuse","count":N,"code":"UNAVAILABLE"}: the next N stream opens
  // fail at once with that status; -1 refuses every open, 0 stops refusing.
  refuse(c) {
    const n = c.count === undefined ? 1 : c.count;
    if (!Number.isInteger(n) || n < -1) throw new CommandError('"count" must be an integer >= -1');
    state.refuse = n;
    state.refuseCode = statusCode(c.code, grpc.status.UNAVAILABLE);
    return { refuse_pending: state.refuse };
  },

  // {"cmd":"unimplemented","on":true}: GetContainerEvents answers
  // UNIMPLEMENTED (as containerd 1.6 does) until turned off.
  unimplemented(c) {
    state.unimplemented = c.on === undefined ? true : !!c.on;
    return { unimplemented: state.unimplemented };
  },

  // {"cmd":"stats"}: open streams, stream opens and calls per method.
  stats() {
    return {};
  },

  // {"cmd":"reset_counts"}: zeroes the call and stream counters.
  reset_counts() {
    state.calls = {};
    state.streamOpens = state.streamsAccepted = state.streamsRefused = state.eventsSent = 0;
    return {};
  },

  // {"cmd":"wait_streams","count":N,"timeout_ms":T}: answers once exactly N
  // streams are open, or with ok false after T ms (default 10000).
  async wait_streams(c) {
    const want = c.count === undefined ? 1 : c.count;
    const timeout = c.timeout_ms === undefined ? 10000 : c.timeout_ms;
    const deadline = Date.now() + timeout;
    while (state.streams.size !== want) {
      if (Date.now() >= deadline)
        return { ok: false, error: `timed out after ${timeout} ms waiting for ${want} open stream(s)` };
      await sleep(5);
    }
    return {};
  },

  // {"cmd":"quit"}: answers, then shuts down.
  quit() {
    setImmediate(() => shutdown(0));
    return {};
  },
};

async function handle(line) {
  let c;
  try {
    c = JSON.parse(line);
  } catch (e) {
    return { ok: false, error: `not JSON: ${e.message}` };
  }
  if (!c || typeof c !== 'object' || Array.isArray(c)) return { ok: false, error: 'a command is a JSON object' };
  const fn = Object.prototype.hasOwnProperty.call(commands, c.cmd) ? commands[c.cmd] : null;
  let out;
  if (!fn) {
    out = { ok: false, error: `unknown command "${c.cmd}"` };
  } else {
    try {
      out = Object.assign({ ok: true }, await fn(c));
    } catch (e) {
      if (!(e instanceof CommandError)) log(`${c.cmd}: ${e && e.stack}`);
      out = { ok: false, error: e.message };
    }
  }
  out = Object.assign({ ok: out.ok }, stats(), out);
  if (c.id !== undefined) out.id = c.id;
  return out;
}

// ---------------------------------------------------------------------------
// Main

const server = new grpc.Server();
server.addService(proto.RuntimeService.service, runtimeService);

let shuttingDown = false;
function shutdown(code) {
  if (shuttingDown) return;
  shuttingDown = true;
  for (const call of state.streams) call.emit('error', grpcError(grpc.status.UNAVAILABLE, 'server shutting down'));
  state.streams.clear();
  server.forceShutdown();
  try {
    if (fs.lstatSync(socketPath).isSocket()) fs.unlinkSync(socketPath);
  } catch (e) {
    /* already gone */
  }
  log('shut down');
  process.exit(code);
}

process.on('SIGTERM', () => shutdown(0));
process.on('SIGINT', () => shutdown(130));

try {
  if (fs.lstatSync(socketPath).isSocket()) fs.unlinkSync(socketPath);
} catch (e) {
  /* no stale socket */
}

server.bindAsync(`unix://${path.resolve(socketPath)}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) {
    log(`cannot listen on ${socketPath}: ${err.message}`);
    process.exit(1);
  }
  process.stdout.write(JSON.stringify({ ready: true, socket: path.resolve(socketPath), pid: process.pid, grpc_js: GRPC_JS_VERSION }) + '\n');
  log(`listening on ${socketPath} (grpc-js ${GRPC_JS_VERSION}, node ${process.version})`);

  // Commands run one at a time, so replies come back in order.
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  let chain = Promise.resolve();
  rl.on('line', (line) => {
    if (!line.trim()) return;
    chain = chain.then(async () => {
      const out = await handle(line);
      process.stdout.write(JSON.stringify(out) + '\n');
    });
  });
  rl.on('close', () => {
    chain.then(() => shutdown(0));
  });
});
