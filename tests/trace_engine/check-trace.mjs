// Loads Chrome traces into the Chrome DevTools Performance panel's own trace engine
// (@paulirish/trace_engine, the one Lighthouse uses; pinned by package-lock.json) and prints one
// JSON object per file, on one line, with what the panel would draw:
//
//   error          the exception the engine threw while parsing (null: none)
//   consoleErrors  what the engine logged through console.error / console.warn while parsing
//   warnings       the engine's Warnings handler: {warning name: events}
//   generic        whether the engine took the trace as a generic (non-web-page) trace
//   bounds         the engine's trace bounds {min, max, range} in µs
//   threads        per (pid, tid) with drawn events (X, B/E, i): process and thread names,
//                  slices in the file (X events, B/E pairs), entries the engine put in the
//                  thread's tree, dropped (the difference) and a few dropped slices with the
//                  deepest tree entry they start in and end after
//   unnamedProcesses, unnamedThreads
//                  pids and (pid, tid)s with drawn events but no process_name / thread_name
//   moduleParents  every `<module>` slice that has a parent in the tree: the parent, and whether
//                  it is an ordinary function: a python_function slice that did not run that
//                  module's code. With --stacks, one that is never the module's caller in the
//                  profile's sampled stacks; without, one that is neither another `<module>` nor
//                  a frame through which module code runs (importlib's _call_with_frames_removed
//                  and FrozenImporter.exec_module, runpy's _run_code, exec, site's addpackage)
//   pythonEdges    every distinct parent -> child pair of python_function slices in the tree, as
//                  "name (file:line)" (the line is the one of the slice's first sample)
//   unknownEdges   with --stacks: the pythonEdges whose parent never calls the child in the
//                  sampled stacks (compared by function name and file): slices nested under a
//                  function that did not call them
//
// Usage: node check-trace.mjs [--stacks FOLDED] FILE...
//   FILE     a .json or .json.gz Chrome trace ({"traceEvents": [...]} or a bare array of events)
//   FOLDED   the profile's stacks as `sprof export -f collapsed` writes them ("a;b;c count" lines,
//            frames "name (file:line)", root first); applies to the files after it
// Exit status 0 when every file was read; the verdicts are the caller's.

import fs from 'node:fs';
import zlib from 'node:zlib';

import * as Trace from '@paulirish/trace_engine';
import {polyfillDOMRect} from '@paulirish/trace_engine/analyze-trace.mjs';

polyfillDOMRect();

// Frames through which a module's code runs: a `<module>` under one of them is an import or a
// script run, not a call of an ordinary function.
const MODULE_RUNNERS =
    new Set(['<module>', '_call_with_frames_removed', 'FrozenImporter.exec_module', '_run_code', 'exec', 'addpackage']);
const EXAMPLES = 5;

function load(file) {
  let buffer = fs.readFileSync(file);
  if (buffer.length >= 2 && buffer[0] === 0x1f && buffer[1] === 0x8b) {
    buffer = zlib.gunzipSync(buffer);
  }
  const json = JSON.parse(buffer.toString('utf8'));
  return Array.isArray(json) ? json : json.traceEvents;
}

// Caller -> callee pairs of folded stacks, keyed by function name and file.
function stackPairs(file) {
  const pairs = new Set();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const stack = line.slice(0, line.lastIndexOf(' ')).split(';').map(f => {
      const m = /^(.*) \((.*):-?\d+\)$/.exec(f);
      return m ? `${m[1]} (${m[2]})` : f;
    });
    for (let i = 1; i < stack.length; ++i) {
      pairs.add(`${stack[i - 1]}\n${stack[i]}`);
    }
  }
  return pairs;
}

const functionOf = event => `${event.name} (${(event.args || {}).file})`;

function frame(event) {
  const args = event.args || {};
  return args.file !== undefined ? `${event.name} (${args.file}:${args.line})` : event.name;
}

function brief(event) {
  const out = {name: event.name, cat: event.cat, ts: event.ts, dur: event.dur ?? 0};
  if (event.args && event.args.file !== undefined) {
    out.file = event.args.file;
    out.line = event.args.line;
  }
  return out;
}

const key = (pid, tid) => `${pid}:${tid}`;

async function check(file, pairs) {
  const result = {
    file,
    error: null,
    consoleErrors: [],
    warnings: {},
    generic: null,
    bounds: null,
    events: 0,
    threads: [],
    unnamedProcesses: [],
    unnamedThreads: [],
    moduleParents: [],
    pythonEdges: [],
    unknownEdges: [],
  };
  const events = load(file);
  result.events = events.length;

  // The file's own slices per thread: X events and B events (the engine pairs B with E).
  const fileSlices = new Map();
  const drawnThreads = new Map();
  for (const e of events) {
    if (e.ph === 'X' || e.ph === 'B') {
      const k = key(e.pid, e.tid);
      if (!fileSlices.has(k)) {
        fileSlices.set(k, []);
      }
      fileSlices.get(k).push(e);
    }
    if (e.ph === 'X' || e.ph === 'B' || e.ph === 'i' || e.ph === 'I') {
      drawnThreads.set(key(e.pid, e.tid), {pid: e.pid, tid: e.tid});
    }
  }

  const saved = {error: console.error, warn: console.warn};
  console.error = console.warn = (...args) => result.consoleErrors.push(args.map(String).join(' '));
  let data;
  try {
    const model = Trace.TraceModel.Model.createWithAllHandlers();
    await model.parse(events);
    const parsed = model.parsedTrace();
    if (!parsed) {
      throw new Error('the engine returned no parsed trace');
    }
    data = parsed.data;
  } catch (e) {
    result.error = String(e && e.stack || e);
    return result;
  } finally {
    console.error = saved.error;
    console.warn = saved.warn;
  }

  const meta = data.Meta;
  result.generic = meta.traceIsGeneric;
  result.bounds = {min: meta.traceBounds.min, max: meta.traceBounds.max, range: meta.traceBounds.range};
  for (const [warning, list] of data.Warnings.perWarning) {
    result.warnings[warning] = list.length;
  }

  const entryToNode = data.Renderer.entryToNode;
  const edges = new Set();
  const byId = (a, b) => String(a.pid).localeCompare(String(b.pid), 'en', {numeric: true}) ||
      String(a.tid).localeCompare(String(b.tid), 'en', {numeric: true});
  for (const {pid, tid} of [...drawnThreads.values()].sort(byId)) {
    const process = data.Renderer.processes.get(pid);
    const thread = process && process.threads.get(tid);
    const processName = meta.processNames.get(pid)?.args?.name ?? null;
    const threadName = meta.threadsInProcess.get(pid)?.get(tid)?.args?.name ?? null;
    const slices = fileSlices.get(key(pid, tid)) || [];
    const tree = thread && thread.tree ? [...walk(thread.tree.roots)] : [];
    const treeSlices = tree.filter(node => node.entry.ph === 'X').length;
    const info = {
      pid,
      tid,
      processName,
      threadName,
      engineThreadName: thread ? thread.name : null,
      slices: slices.length,
      entries: treeSlices,
      dropped: slices.length - treeSlices,
      maxDepth: thread && thread.tree ? thread.tree.maxDepth : 0,
      droppedExamples: [],
    };
    // Dropped slices: the file's slices the engine has no tree node for (B events become
    // synthetic X events, so those are counted, not listed).
    for (const e of slices) {
      if (info.droppedExamples.length >= EXAMPLES) {
        break;
      }
      if (e.ph === 'X' && !entryToNode.has(e)) {
        let inside = null;
        for (const node of tree) {
          const n = node.entry;
          if (n.ts <= e.ts && e.ts < n.ts + (n.dur || 0) && (!inside || node.depth >= inside.depth)) {
            inside = node;
          }
        }
        info.droppedExamples.push({slice: brief(e), startsIn: inside ? brief(inside.entry) : null});
      }
    }
    result.threads.push(info);
    if (processName === null && !result.unnamedProcesses.includes(pid)) {
      result.unnamedProcesses.push(pid);
    }
    if (threadName === null) {
      result.unnamedThreads.push([pid, tid]);
    }
    for (const node of tree) {
      const parent = node.parent && node.parent.entry;
      if (!parent) {
        continue;
      }
      const child = node.entry;
      if (child.name === '<module>') {
        const ordinary = parent.cat === 'python_function' &&
            (pairs ? !pairs.has(`${functionOf(parent)}\n${functionOf(child)}`) : !MODULE_RUNNERS.has(parent.name));
        result.moduleParents.push({parent: brief(parent), child: brief(child), ordinary});
      }
      if (parent.cat === 'python_function' && child.cat === 'python_function') {
        const edge = `${frame(parent)}\n${frame(child)}`;
        if (pairs && !edges.has(edge) && !pairs.has(`${functionOf(parent)}\n${functionOf(child)}`)) {
          result.unknownEdges.push([frame(parent), frame(child)]);
        }
        edges.add(edge);
      }
    }
  }
  result.pythonEdges = [...edges].sort().map(e => e.split('\n'));
  return result;
}

function* walk(roots) {
  const stack = [...roots].reverse();
  while (stack.length) {
    const node = stack.pop();
    yield node;
    for (let i = node.children.length - 1; i >= 0; --i) {
      stack.push(node.children[i]);
    }
  }
}

const args = process.argv.slice(2);
if (!args.length) {
  console.error('usage: node check-trace.mjs [--stacks FOLDED] FILE...');
  process.exit(2);
}
let pairs = null;
for (let i = 0; i < args.length; ++i) {
  if (args[i] === '--stacks') {
    pairs = stackPairs(args[++i]);
    continue;
  }
  process.stdout.write(JSON.stringify(await check(args[i], pairs)) + '\n');
}
