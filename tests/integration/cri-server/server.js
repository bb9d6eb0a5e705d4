#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
//
// A CRI runtime (runtime.v1.RuntimeService) for cubelet's tests, on a real
// gRPC stack: @grpc/grpc-js and @grpc/proto-loader, loading cubelet's own
// runtime/cri/api.proto. Nothing runs: the containers are an in-memory state
// the test sets, and GetContainerEvents streams whatever the test tells it to.
// It is also a minimal runtime for the daemon: RunPodSandbox, CreateContainer,
// StartContainer, StopContainer, RemoveContainer, StopPodSandbox and
// RemovePodSandbox change that state (a container "runs" until it is stopped
// or the test ends it) and send the events containerd 1.7 would; ImageStatus
// finds every image and PullImage succeeds; Status's RuntimeReady is switched
// by the test.
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
    calls: {}, // runtime calls that named this pod's sandboxes or containers
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
  // The runtime part.
  runtimeReady: { status: true, reason: '', message: '' },
  networkReady: { status: true, reason: '', message: '' },
  autoEvents: true, // runtime calls send their container events
  nextId: 1,
  lastEventNs: 0n,
  floodsSent: 0,
};

// A new sandbox or container id, unique in this server's life.
function newId(kind) {
  const n = state.nextId++;
  return `${kind}-${String(n).padStart(6, '0')}${'0'.repeat(8)}`;
}

// "Now" in nanoseconds since the epoch, strictly increasing across calls (two
// events of one burst never share a created_at: EventedPLEG's cache keeps the
// newer of two statuses, and "newer" must be well defined).
const hrBase = BigInt(Date.now()) * 1000000n - process.hrtime.bigint();
function nowNs() {
  let t = hrBase + process.hrtime.bigint();
  if (t <= state.lastEventNs) t = state.lastEventNs + 1n;
  state.lastEventNs = t;
  return t.toString();
}

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

function countPod(pod, method) {
  if (pod) pod.calls[method] = (pod.calls[method] || 0) + 1;
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

// ---------------------------------------------------------------------------
// The runtime: calls that change the state, and the events they send

function notFound(what, id) {
  return grpcError(grpc.status.NOT_FOUND, `an error occurred when try to find ${what} "${id}": not found`);
}

// One ContainerEventResponse for a container (or sandbox) of pod's sandbox
// sb: the sandbox status and the statuses of that sandbox's containers, as
// containerd 1.7 sends them.
function eventMessage(type, containerId, pod, sb, createdAt) {
  return {
    container_id: containerId,
    container_event_type: type,
    created_at: createdAt,
    pod_sandbox_status: sandboxStatus(pod, sb),
    containers_statuses: pod.containers.filter((x) => x.sandbox === sb.id).map((x) => containerStatus(pod, x)),
  };
}

function broadcast(msg) {
  let n = 0;
  for (const call of state.streams) {
    call.write(msg);
    n++;
  }
  state.eventsSent += n;
  return n;
}

// The event a runtime call causes, when auto events are on.
function autoEvent(type, containerId, pod, sb) {
  if (!state.autoEvents) return;
  const n = broadcast(eventMessage(type, containerId, pod, sb, nowNs()));
  log(`auto event ${type} container=${containerId} pod=${pod.name} -> ${n} stream(s)`);
}

function sandboxOf(pod, c) {
  return pod.sandboxes.find((s) => s.id === c.sandbox);
}

// A container ends: EXITED with its exit code, now.
function exitContainer(pod, c, exitCode, reason) {
  c.state = 'CONTAINER_EXITED';
  c.exit_code = exitCode;
  c.finished_at = nowNs();
  c.reason = reason;
  if (c.started_at === '0') c.started_at = c.finished_at;
}

function runPodSandbox(req) {
  const cfg = req.config;
  if (!cfg || !cfg.metadata || !cfg.metadata.uid) throw grpcError(grpc.status.INVALID_ARGUMENT, 'config.metadata.uid is required');
  const md = cfg.metadata;
  let pod = state.pods.get(md.uid);
  if (!pod) {
    pod = { uid: md.uid, name: md.name, namespace: md.namespace, sandboxes: [], containers: [], calls: {} };
    state.pods.set(pod.uid, pod);
  }
  countPod(pod, 'RunPodSandbox');
  const n = state.nextId;
  const sb = {
    id: newId('sb'),
    attempt: md.attempt | 0,
    state: 'SANDBOX_READY',
    created_at: nowNs(),
    ip: `10.88.${(n >> 8) & 255}.${n & 255}`,
    additional_ips: [],
    labels: Object.assign({}, cfg.labels),
    annotations: Object.assign({}, cfg.annotations),
  };
  pod.sandboxes.push(sb);
  autoEvent('CONTAINER_CREATED_EVENT', sb.id, pod, sb);
  autoEvent('CONTAINER_STARTED_EVENT', sb.id, pod, sb);
  return { pod_sandbox_id: sb.id };
}

function stopPodSandbox(req) {
  const [pod, sb] = findSandbox(req.pod_sandbox_id);
  // Idempotent, as CRI asks: an unknown sandbox is already stopped.
  if (!sb) return {};
  countPod(pod, 'StopPodSandbox');
  for (const c of pod.containers)
    if (c.sandbox === sb.id && c.state !== 'CONTAINER_EXITED') {
      exitContainer(pod, c, 137, 'Error');
      autoEvent('CONTAINER_STOPPED_EVENT', c.id, pod, sb);
    }
  if (sb.state !== 'SANDBOX_NOTREADY') {
    sb.state = 'SANDBOX_NOTREADY';
    autoEvent('CONTAINER_STOPPED_EVENT', sb.id, pod, sb);
  }
  return {};
}

function removePodSandbox(req) {
  const [pod, sb] = findSandbox(req.pod_sandbox_id);
  if (!sb) return {};
  countPod(pod, 'RemovePodSandbox');
  if (sb.state === 'SANDBOX_READY') throw grpcError(grpc.status.FAILED_PRECONDITION, `sandbox "${sb.id}" is still running: stop it first`);
  for (const c of pod.containers.filter((x) => x.sandbox === sb.id)) {
    pod.containers = pod.containers.filter((x) => x !== c);
    autoEvent('CONTAINER_DELETED_EVENT', c.id, pod, sb);
  }
  pod.sandboxes = pod.sandboxes.filter((s) => s !== sb);
  autoEvent('CONTAINER_DELETED_EVENT', sb.id, pod, sb);
  if (pod.sandboxes.length === 0) state.pods.delete(pod.uid);
  return {};
}

function createContainer(req) {
  const [pod, sb] = findSandbox(req.pod_sandbox_id);
  if (!sb) throw notFound('sandbox', req.pod_sandbox_id);
  countPod(pod, 'CreateContainer');
  const cfg = req.config;
  if (!cfg || !cfg.metadata || !cfg.metadata.name) throw grpcError(grpc.status.INVALID_ARGUMENT, 'config.metadata.name is required');
  if (sb.state !== 'SANDBOX_READY') throw grpcError(grpc.status.FAILED_PRECONDITION, `sandbox "${sb.id}" is not ready`);
  const image = (cfg.image && cfg.image.image) || '';
  const c = {
    id: newId('ct'),
    sandbox: sb.id,
    name: cfg.metadata.name,
    attempt: cfg.metadata.attempt | 0,
    state: 'CONTAINER_CREATED',
    created_at: nowNs(),
    started_at: '0',
    finished_at: '0',
    exit_code: 0,
    image,
    image_ref: imageId(image),
    reason: '',
    message: '',
    labels: Object.assign({}, cfg.labels),
    annotations: Object.assign({}, cfg.annotations),
  };
  pod.containers.push(c);
  autoEvent('CONTAINER_CREATED_EVENT', c.id, pod, sb);
  return { container_id: c.id };
}

function startContainer(req) {
  const [pod, c] = findContainer(req.container_id);
  if (!c) throw notFound('container', req.container_id);
  countPod(pod, 'StartContainer');
  if (c.state !== 'CONTAINER_CREATED') throw grpcError(grpc.status.FAILED_PRECONDITION, `container "${c.id}" is in state ${c.state}, not CONTAINER_CREATED`);
  c.state = 'CONTAINER_RUNNING';
  c.started_at = nowNs();
  autoEvent('CONTAINER_STARTED_EVENT', c.id, pod, sandboxOf(pod, c));
  return {};
}

function stopContainer(req) {
  const [pod, c] = findContainer(req.container_id);
  if (!c) throw notFound('container', req.container_id);
  countPod(pod, 'StopContainer');
  if (c.state === 'CONTAINER_EXITED') return {};
  // A graceful stop ends on SIGTERM (143), a timeout of 0 on SIGKILL (137).
  exitContainer(pod, c, Number(req.timeout) > 0 ? 143 : 137, 'Error');
  autoEvent('CONTAINER_STOPPED_EVENT', c.id, pod, sandboxOf(pod, c));
  return {};
}

function removeContainer(req) {
  const [pod, c] = findContainer(req.container_id);
  if (!c) return {};
  countPod(pod, 'RemoveContainer');
  if (c.state === 'CONTAINER_RUNNING') throw grpcError(grpc.status.FAILED_PRECONDITION, `container "${c.id}" is running: stop it first`);
  pod.containers = pod.containers.filter((x) => x !== c);
  autoEvent('CONTAINER_DELETED_EVENT', c.id, pod, sandboxOf(pod, c));
  return {};
}

// Every image is present: a stable id from its name.
function imageId(name) {
  return 'sha256:' + require('crypto').createHash('sha256').update(name).digest('hex');
}

function runtimeCondition(type, c) {
  return { type, status: c.status, reason: c.reason, message: c.message };
}

const imageService = {
  ImageStatus: unary('ImageStatus', (req) => {
    const name = (req.image && req.image.image) || '';
    if (!name) throw grpcError(grpc.status.INVALID_ARGUMENT, 'image.image is required');
    return { image: { id: imageId(name), repo_tags: [name], repo_digests: [], size: '1048576', username: '', pinned: false }, info: {} };
  }),
  PullImage: unary('PullImage', (req) => {
    const name = (req.image && req.image.image) || '';
    if (!name) throw grpcError(grpc.status.INVALID_ARGUMENT, 'image.image is required');
    return { image_ref: imageId(name) };
  }),
};

const runtimeService = {
  Version: unary('Version', () => ({
    version: '0.1.0',
    runtime_name: 'cubelet-test-cri',
    runtime_version: `grpc-js-${GRPC_JS_VERSION}`,
    runtime_api_version: 'v1',
  })),

  Status: unary('Status', (req) => ({
    status: {
      conditions: [runtimeCondition('RuntimeReady', state.runtimeReady), runtimeCondition('NetworkReady', state.networkReady)],
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

  RunPodSandbox: unary('RunPodSandbox', runPodSandbox),
  StopPodSandbox: unary('StopPodSandbox', stopPodSandbox),
  RemovePodSandbox: unary('RemovePodSandbox', removePodSandbox),
  CreateContainer: unary('CreateContainer', createContainer),
  StartContainer: unary('StartContainer', startContainer),
  StopContainer: unary('StopContainer', stopContainer),
  RemoveContainer: unary('RemoveContainer', removeContainer),

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
    runtime_ready: state.runtimeReady.status,
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
    for (const pod of state.pods.values()) pod.calls = {};
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

  // {"cmd":"runtime_ready","ready":false,"reason":"...","message":"...",
  //  "network":true}: what Status says of RuntimeReady (and NetworkReady
  // with "network"). Everything else keeps working, as in containerd.
  runtime_ready(c) {
    if (typeof c.ready !== 'boolean') throw new CommandError('"ready" must be true or false');
    state.runtimeReady = {
      status: c.ready,
      reason: str(c.reason, 'reason', c.ready ? '' : 'TestNotReady'),
      message: str(c.message, 'message', c.ready ? '' : 'runtime made unhealthy by the test'),
    };
    if (c.network !== undefined) {
      if (typeof c.network !== 'boolean') throw new CommandError('"network" must be true or false');
      state.networkReady = { status: c.network, reason: c.network ? '' : 'TestNotReady', message: '' };
    }
    log(`Status: RuntimeReady=${c.ready}`);
    return { runtime_ready: state.runtimeReady.status, network_ready: state.networkReady.status };
  },

  // {"cmd":"auto_events","on":false}: runtime calls stop sending their
  // container events (on by default).
  auto_events(c) {
    state.autoEvents = c.on === undefined ? true : !!c.on;
    return { auto_events: state.autoEvents };
  },

  // {"cmd":"exit_container","id":"ct-...","exit_code":1}: a running (or
  // created) container ends, as if its process exited; sends its STOPPED event.
  exit_container(c) {
    const [pod, ct] = findContainer(str(c.id, 'id'));
    if (!ct) throw new CommandError(`no container "${c.id}"`);
    if (ct.state === 'CONTAINER_EXITED') throw new CommandError(`container "${c.id}" has exited already`);
    if (c.exit_code !== undefined && !Number.isInteger(c.exit_code)) throw new CommandError('"exit_code" must be an integer');
    exitContainer(pod, ct, c.exit_code === undefined ? 1 : c.exit_code, 'Error');
    autoEvent('CONTAINER_STOPPED_EVENT', ct.id, pod, sandboxOf(pod, ct));
    return { id: ct.id };
  },

  // {"cmd":"flood","count":N,"type":"CONTAINER_STOPPED_EVENT",
  //  "name_prefix":"p-","exit_code":1,"end":true}: a burst of N events,
  // round robin over the running containers of the pods whose name starts
  // with name_prefix (all pods by default), written at once on every open
  // stream, each with its own created_at. With "end" (the default for
  // STOPPED) those containers first exit with exit_code (default 1), so
  // the events tell the truth and a resync has work to do. Reply: "sent"
  // (events), "targets" (containers), "ended" (their ids), "ms" (time to
  // queue them) and "buffered" (bytes the streams still hold).
  flood(c) {
    const n = c.count === undefined ? 10000 : c.count;
    if (!Number.isInteger(n) || n < 1 || n > 1000000) throw new CommandError('"count" must be an integer in [1, 1000000]');
    const type = oneOf(c.type, EVENT_TYPES, 'CONTAINER_STOPPED_EVENT', 'type');
    const prefix = str(c.name_prefix, 'name_prefix', '');
    const end = c.end === undefined ? type === 'CONTAINER_STOPPED_EVENT' : !!c.end;
    const exitCode = c.exit_code === undefined ? 1 : c.exit_code;
    if (!Number.isInteger(exitCode)) throw new CommandError('"exit_code" must be an integer');
    const targets = [];
    for (const [pod, ct] of allContainers())
      if (pod.name.startsWith(prefix) && ct.state === 'CONTAINER_RUNNING') targets.push([pod, ct]);
    if (targets.length === 0) throw new CommandError(`no running container in a pod named "${prefix}*"`);
    if (state.streams.size === 0) throw new CommandError('no open GetContainerEvents stream to flood');
    const t0 = process.hrtime.bigint();
    if (end) for (const [pod, ct] of targets) exitContainer(pod, ct, exitCode, 'Error');
    let sent = 0;
    for (let i = 0; i < n; i++) {
      const [pod, ct] = targets[i % targets.length];
      sent += broadcast(eventMessage(type, ct.id, pod, sandboxOf(pod, ct), nowNs()));
    }
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    let buffered = 0;
    for (const call of state.streams) buffered += call.writableLength || 0;
    state.floodsSent += sent;
    log(`flood: ${sent} ${type} event(s) over ${targets.length} container(s) in ${ms.toFixed(1)} ms`);
    return { sent, targets: targets.length, ended: end ? targets.map(([, ct]) => ct.id) : [], ms, buffered };
  },

  // {"cmd":"pods","name_prefix":"p-"}: the pods (all, or those whose name
  // starts with name_prefix), their sandboxes, containers and the runtime
  // calls made for each ("calls": {"CreateContainer": 2, ...}).
  pods(c) {
    const prefix = str(c.name_prefix, 'name_prefix', '');
    const items = [];
    for (const pod of state.pods.values()) {
      if (!pod.name.startsWith(prefix)) continue;
      items.push({
        uid: pod.uid,
        name: pod.name,
        namespace: pod.namespace,
        sandboxes: pod.sandboxes.map((s) => ({ id: s.id, state: s.state, attempt: s.attempt })),
        containers: pod.containers.map((x) => ({
          id: x.id, sandbox: x.sandbox, name: x.name, state: x.state, attempt: x.attempt, exit_code: x.exit_code,
        })),
        calls: Object.assign({}, pod.calls),
      });
    }
    return { items };
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
server.addService(proto.ImageService.service, imageService);

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
