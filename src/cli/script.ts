/**
 * A user's script as `vmmkit trace`, `vmmkit inspect` and `vmmkit map` run
 * it: an ES module whose default export receives one set of helpers (Note
 * [Script helpers]), and the states of the processes it made.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  createMachine,
  createRuntime,
  DEVICE_PRESETS,
  type ProcessOptions,
} from '../compose/create-runtime.js';
import type { Runtime, RuntimeDescription } from '../core/runtime.js';
import type { Tracer } from '../core/trace.js';
import { FRONT_END_OF, startOnFrontEnd } from '../entry/front-end-process.js';
import { createAcl, createCuda, createHip } from '../entry/processes.js';
import { type AllocatorFactory, selectAllocators } from '../replay/engine/allocators.js';
import { recordedSettings } from '../replay/engine/as-recorded.js';
import { replay } from '../replay/engine/replay.js';
import { planReplay } from '../replay/engine/trace-plan.js';
import { loadSnapshotFile } from '../replay/read/load.js';
import { detectVendor, parseVendor, type SnapshotVendor } from '../replay/read/vendor.js';
import { ScriptError, UsageError } from './errors.js';

/*
 * Note [Script helpers]: the three commands that run a script hand its
 * default export the same object, so one script runs under each of them and
 * the README documents one list:
 *
 *   createCuda, createHip, createAcl   a process of that front end (the package's own options)
 *   createRuntime                      a process with no front end (core's API)
 *   createMachine                      a simulated machine that several processes join
 *   tracer                             the Tracer every process made here reports to
 *   mark(name)                         a named point of the script's own
 *
 * Every process is traced under every command, so `tracer.on(...)` works
 * wherever the script runs (trace prints the tree; inspect and map keep no
 * spans). Every process is watched too: what it was just before its
 * dispose, or when the script returned, and at each mark. What differs is
 * only what a command shows: trace the tree (a mark is a `[script] mark`
 * span in it, so `--break mark` stops there), inspect and map the processes
 * at their end or, with `--at NAME`, every live process at mark NAME.
 * Before, each command made its own list: `mark` existed only in map and
 * `createRuntime` not in trace, so a script written for one failed in another.
 *
 * Note [A snapshot as a program]: where a script goes, a PyTorch memory
 * snapshot (`.pickle`, `.pickle.gz`, `.pkl`) may go instead: the program is
 * its replay on its vendor's front end (src/entry/front-end-process.ts), an
 * NPU snapshot's on ACL over an Ascend 910B, a ROCm one's on HIP over an
 * MI300X, a CUDA one's on CUDA over an H200, under the settings the
 * recording shows (as-recorded.ts's recordedSettings). Its processes are made
 * with the helpers, so `trace --break aclrtMapMem`, `inspect` and `map` see
 * them as any script's; it marks 'end' after the recording's last event,
 * before the allocator lets its memory go (`inspect --at end`).
 */

/** What a script's default export receives (Note [Script helpers]). */
export interface ScriptHelpers {
  readonly createCuda: (options?: ProcessOptions) => ReturnType<typeof createCuda>;
  readonly createHip: (options?: ProcessOptions) => ReturnType<typeof createHip>;
  readonly createAcl: (options?: ProcessOptions) => ReturnType<typeof createAcl>;
  readonly createRuntime: (options?: ProcessOptions) => Runtime;
  readonly createMachine: typeof createMachine;
  readonly tracer: Tracer;
  readonly mark: (name: string) => void;
}

/** The helpers by name, as the error for a script without a default function says them. */
const HELPER_NAMES = '{ createCuda, createHip, createAcl, createRuntime, createMachine, tracer, mark }';

/** One process as a script left it, or as it was at a mark. */
export interface ProcessState {
  readonly pid: number;
  /** 'CUDA', 'HIP', 'ACL', or undefined for a process made with createRuntime. */
  readonly vendor: string | undefined;
  /** 'just before it was disposed', 'when the script returned', or "at mark 'NAME'". */
  readonly when: string;
  readonly description: RuntimeDescription;
}

// ScriptError lives in errors.ts with the command line's other errors; re-exported here, where it was.
export { ScriptError } from './errors.js';

/**
 * Run `script` with the helpers over `tracer`. Returns each process at its
 * end (those disposed first, in order, then those live when it returned),
 * or with `at`, every process live at each `mark(at)` (a script that never
 * marks `at` is a ScriptError).
 */
export async function runScript(
  script: string,
  tracer: Tracer,
  at?: string,
  vendor?: SnapshotVendor,
): Promise<ProcessState[]> {
  if (vendor !== undefined && !SNAPSHOT_FILE.test(script))
    throw new ScriptError(`--vendor is for a snapshot (.pickle, .pickle.gz, .pkl), not the script ${script}`);
  const main = SNAPSHOT_FILE.test(script) ? await snapshotProgram(script, vendor) : await loadScript(script);
  const live: { rt: Runtime; vendor: string | undefined }[] = [];
  const ended: ProcessState[] = [];
  const marked: ProcessState[] = [];
  let reached = false;
  const state = (rt: Runtime, vendor: string | undefined, when: string): ProcessState => ({
    pid: rt.pid,
    vendor,
    when,
    description: rt.describe(),
  });
  const watch = (rt: Runtime, vendor: string | undefined) => {
    const entry = { rt, vendor };
    live.push(entry);
    const dispose = rt.dispose.bind(rt);
    // "At its end", for a process the script disposes, is the state just before the dispose.
    rt.dispose = () => {
      const i = live.indexOf(entry);
      if (i >= 0) {
        live.splice(i, 1);
        ended.push(state(rt, vendor, 'just before it was disposed'));
      }
      dispose();
    };
  };
  const front =
    <T extends { runtime: Runtime }>(create: (options?: ProcessOptions) => T, vendor: string) =>
    (options: ProcessOptions = {}): T => {
      const p = create({ ...options, tracer });
      watch(p.runtime, vendor);
      return p;
    };
  const helpers: ScriptHelpers = {
    createCuda: front(createCuda, 'CUDA'),
    createHip: front(createHip, 'HIP'),
    createAcl: front(createAcl, 'ACL'),
    createRuntime: (options: ProcessOptions = {}) => {
      const rt = createRuntime({ ...options, tracer });
      watch(rt, undefined);
      return rt;
    },
    createMachine,
    tracer,
    mark: (name: string) => {
      tracer.event('script', 'mark', [name]);
      if (name !== at) return;
      reached = true;
      for (const { rt, vendor } of live) marked.push(state(rt, vendor, `at mark '${name}'`));
    },
  };
  try {
    await main(helpers);
  } catch (e) {
    throw new ScriptError(`${script} threw: ${thrown(e, script)}`);
  }
  if (at !== undefined && !reached) throw new ScriptError(`the script never called mark('${at}')`);
  if (at !== undefined) return marked;
  return [...ended, ...live.map(({ rt, vendor }) => state(rt, vendor, 'when the script returned'))];
}

/** --vendor's value for a snapshot run as a program; a UsageError unless cuda, rocm or npu. */
export function readVendor(text: string | undefined): SnapshotVendor | undefined {
  if (text === undefined) return undefined;
  const vendor = parseVendor(text);
  if (vendor === undefined) throw new UsageError(`--vendor is cuda, rocm or npu, not '${text}'`);
  return vendor;
}

/** A file name that is a snapshot, not a script (Note [A snapshot as a program]). */
const SNAPSHOT_FILE = /\.(pickle|pkl)(\.gz)?$/i;

/** The replay of the snapshot at `path` on its vendor's front end, as a script (Note [A snapshot as a program]). */
async function snapshotProgram(
  path: string,
  given: SnapshotVendor | undefined,
): Promise<(helpers: ScriptHelpers) => unknown> {
  if (!existsSync(resolve(path))) throw new ScriptError(`cannot load ${path}: no such file`);
  let snapshot: Awaited<ReturnType<typeof loadSnapshotFile>>;
  try {
    snapshot = await loadSnapshotFile(path);
  } catch (e) {
    throw new ScriptError(
      `cannot read ${path}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`,
    );
  }
  const vendor = given ?? detectVendor(snapshot).vendor;
  const device = FRONT_END_OF[vendor].device;
  return (helpers) => {
    const plan = planReplay(snapshot, { deviceMemory: DEVICE_PRESETS[device].totalMemory });
    const pytorch = selectAllocators(['pytorch'])[0];
    let ended = false;
    // Replay disposes the allocators after the last event and before the process: 'end' is marked between.
    const marking: AllocatorFactory = {
      ...pytorch,
      create: (context, settings) => {
        const allocator = pytorch.create(context, settings);
        const dispose = allocator.dispose.bind(allocator);
        allocator.dispose = () => {
          if (!ended) helpers.mark('end');
          ended = true;
          dispose();
        };
        return allocator;
      },
    };
    const run = replay(snapshot, {
      allocators: [marking],
      plan,
      settings: recordedSettings(snapshot, plan).settings,
      keepEvents: false,
      startProcess: startOnFrontEnd({
        vendor,
        tracer: helpers.tracer,
        createAcl: helpers.createAcl,
        createHip: helpers.createHip,
        createCuda: helpers.createCuda,
      }),
    }).allocators[0];
    if (run.error !== undefined) throw new ScriptError(`the replay of ${path} ended early: ${run.error}`);
  };
}

/** The script's default export; a ScriptError says in one line why there is none. */
async function loadScript(script: string): Promise<(helpers: ScriptHelpers) => unknown> {
  const path = resolve(script);
  if (!existsSync(path)) throw new ScriptError(`cannot load ${script}: no such file`);
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(path).href)) as { default?: unknown };
  } catch (e) {
    throw new ScriptError(
      `cannot load ${script}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`,
    );
  }
  if (typeof mod.default !== 'function')
    throw new ScriptError(`${script} must export a default function taking ${HELPER_NAMES}`);
  return mod.default as (helpers: ScriptHelpers) => unknown;
}

/** A script's error in one line: its message and the script's own line that threw, where the stack names it. */
function thrown(e: unknown, script: string): string {
  if (!(e instanceof Error)) return String(e);
  const path = resolve(script);
  const at = e.stack
    ?.split('\n')
    .find((l) => l.includes(path))
    ?.trim();
  const line = at === undefined ? undefined : /:(\d+):\d+\)?$/.exec(at)?.[1];
  return `${e.message.split('\n')[0]}${line === undefined ? '' : ` (line ${line})`}`;
}
