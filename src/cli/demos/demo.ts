/**
 * `vmmkit demo` (`npm run demo`): what most people came for first, a
 * PyTorch memory snapshot answered, then the seeds' VMM sequences through
 * each vendor's front end with their call trees.
 *
 * The snapshot is a committed one that ended in an OOM
 * (examples/gpt_train-oom.pickle.gz, recorded on an H200), answered as
 * `vmmkit replay` answers it: the recording reproduced first, the cap it
 * ran under inferred, then each allocator's verdict over that cap.
 * `--flavor NAME` runs one vendor's sequence alone, with no snapshot.
 */
import { Tracer, traceToJson } from '../../core/trace.js';
import { packagePath } from '../../util/package-path.js';
import { parseCommand, UsageError, usageLine, usageOf } from '../arguments.js';
import type { CliOutput } from '../cli.js';
import { DEMO_SPEC } from '../command-specs.js';
import { replayCommand } from '../replay.js';
import { printTree } from '../trace.js';
import { aclDemo } from './acl.js';
import { cudaDemo } from './cuda.js';
import { hipDemo } from './hip.js';

/** The committed snapshot the demo opens with, inside the package. */
export const DEMO_SNAPSHOT = 'examples/gpt_train-oom.pickle.gz';

/** The replay the demo shows: PyTorch's allocator as recorded and with expandable segments. */
export const DEMO_REPLAY_ARGS: readonly string[] = [
  DEMO_SNAPSHOT,
  '--allocator',
  'pytorch',
  '--allocator',
  'pytorch-expandable',
];

export const SNAPSHOT_TITLE = 'A PyTorch memory snapshot that ended in an OOM, answered (vmmkit replay)';

export const DEMOS = {
  cuda: { title: 'CUDA driver API on a simulated H200 (seed 1, section 6)', run: cudaDemo },
  hip: { title: 'HIP on a simulated MI300X (seed 1, section 6)', run: hipDemo },
  acl: { title: "Ascend ACL on a simulated Ascend 910B (seed 2's seven steps)", run: aclDemo },
} as const;
type Flavor = keyof typeof DEMOS;

const DEMO_USAGE = usageOf(DEMO_SPEC);

/**
 * The snapshot answer: the command as typed, then what `vmmkit replay` prints for it, run in this
 * process on the package's copy of the snapshot. True when the replay answered (exit 0).
 */
export async function snapshotDemo(io: CliOutput): Promise<boolean> {
  const path = packagePath(DEMO_SNAPSHOT);
  io.out(`$ vmmkit replay ${DEMO_REPLAY_ARGS.join(' ')}`);
  if (path === undefined) {
    io.out(`(the package's ${DEMO_SNAPSHOT} was not found, so there is no snapshot to answer here)`);
    return false;
  }
  // The answer first; replay's notes (standard error) after it.
  const notes: string[] = [];
  const code = await replayCommand({ out: io.out, err: (l) => notes.push(l) }, [
    path,
    ...DEMO_REPLAY_ARGS.slice(1),
  ]);
  for (const note of notes) io.err(note);
  io.out('');
  io.out('Yours: record with torch.cuda.memory._record_memory_history(), dump with _dump_snapshot(),');
  io.out('then `vmmkit replay`, `vmmkit advise` (what to set) and `vmmkit report` (a page): README.md.');
  return code === 0;
}

/** Run `vmmkit demo` with its arguments; returns the exit code. */
export async function demoCommand(io: CliOutput, argv: readonly string[]): Promise<number> {
  let json: boolean;
  let only: Flavor | undefined;
  let layers: 'vendor' | 'generic';
  try {
    const { values } = parseCommand(DEMO_SPEC, argv);
    const flavor = values.flavor;
    const asked = values.layers ?? 'vendor';
    if (flavor !== undefined && !Object.hasOwn(DEMOS, flavor))
      throw new UsageError(`unknown flavor '${flavor}' (cuda, hip or acl)`);
    if (asked !== 'generic' && asked !== 'vendor')
      throw new UsageError(`--layers is generic or vendor, not '${asked}'`);
    json = values.json === true;
    only = flavor as Flavor | undefined;
    layers = asked;
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.err(usageLine('demo', e.message, DEMO_USAGE));
    return 2;
  }
  let ok = true;
  // The snapshot first, unless one vendor's sequence was asked for.
  let snapshot: { title: string; lines: string[] } | undefined;
  if (only === undefined) {
    if (json) {
      const lines: string[] = [];
      ok = (await snapshotDemo({ out: (l) => lines.push(l), err: io.err })) && ok;
      snapshot = { title: SNAPSHOT_TITLE, lines };
    } else {
      io.out(`\n=== ${SNAPSHOT_TITLE} ===\n`);
      ok = (await snapshotDemo(io)) && ok;
    }
  }
  const flavors = only === undefined ? (Object.keys(DEMOS) as Flavor[]) : [only];
  // With --json: one document, the snapshot's lines, then each demo's printed lines and its call tree.
  const documents: { flavor: Flavor; title: string; lines: string[]; trace: unknown }[] = [];
  for (const f of flavors) {
    const { title, run } = DEMOS[f];
    const tracer = new Tracer({ layers });
    if (json) {
      const lines: string[] = [];
      ok = run((line) => lines.push(line), tracer) && ok;
      documents.push({ flavor: f, title, lines, trace: traceToJson(tracer.roots) });
      continue;
    }
    io.out(`\n=== ${title} ===\n`);
    ok = run((line) => io.out(line), tracer) && ok;
    io.out(
      layers === 'vendor'
        ? `\n--- call tree through the vendor's own layers (--layers generic: vmmkit's) ---\n`
        : `\n--- call tree: flavor -> core -> backend -> device ---\n`,
    );
    printTree(io, tracer, false);
  }
  if (json)
    io.out(
      JSON.stringify(
        snapshot === undefined ? { layers, demos: documents } : { layers, snapshot, demos: documents },
        null,
        2,
      ),
    );
  return ok ? 0 : 1;
}
