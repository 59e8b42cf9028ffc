/**
 * `vmmkit compare <before.pickle[.gz]> <after.pickle[.gz]> [--alloc-conf CONF] [--memory-limit SIZE]
 *                 [--device NAME] [--device-memory SIZE] [--json]`
 *
 * Two snapshots of one job, before and after a change, compared at their
 * peaks (src/replay/analyse/compare.ts): each reproduced as recorded first,
 * then peak reserved and allocated, the categories that hold memory at the
 * peak, and the stacks whose bytes changed most. With --alloc-conf or
 * --memory-limit both are replayed under that setting too, so one recording
 * of each is enough to say what the setting would have made of each. With
 * --json: exactly one object on stdout (the SnapshotComparison).
 *
 * Exit codes: 0 compared; 1 bad input (a missing or corrupt file, a pickle
 * that is not a snapshot, one with no history), one line; 2 a usage mistake
 * (not two files, a bad option), one line with the usage.
 */
import { startOnSimulator } from '../entry/replay-processes.js';
import { compareSnapshots } from '../replay/analyse/compare.js';
import { compareLines } from '../replay/analyse/lines.js';
import { planReplay } from '../replay/engine/trace-plan.js';
import { loadSnapshotFile } from '../replay/read/load.js';
import { withVendor } from '../replay/read/vendor.js';
import { parseCommand, UsageError, usageOf } from './arguments.js';
import type { CliOutput } from './cli.js';
import { runCommand } from './command.js';
import { COMPARE_SPEC } from './command-specs.js';
import { checkHistory, loadProgress } from './replay.js';
import { deviceFor, whatIfOf } from './what-if-options.js';

export const COMPARE_USAGE = usageOf(COMPARE_SPEC);

/** Run `vmmkit compare` with its arguments; returns the exit code. */
export function compareCommand(io: CliOutput, argv: readonly string[]): Promise<number> {
  return runCommand(io, 'compare', COMPARE_USAGE, () => run(io, argv));
}

async function run(io: CliOutput, argv: readonly string[]): Promise<number> {
  const { values, operands } = parseCommand(COMPARE_SPEC, argv);
  if (operands.length !== 2)
    throw new UsageError(`give two snapshot files, before and after (${operands.length} given)`);
  const { allocConf, memoryLimit, device: named, vendor } = whatIfOf({ ...values, allocator: ['pytorch'] });
  const snapshots = [];
  const plans = [];
  // The first snapshot's vendor chooses the device both are replayed on, unless --device names one.
  let device: typeof named;
  for (const file of operands) {
    const snapshot = withVendor(await loadSnapshotFile(file, { onProgress: loadProgress(io) }), vendor);
    device ??= deviceFor(named, snapshot);
    const plan = planReplay(snapshot, { memoryLimit, deviceMemory: device?.totalMemory });
    checkHistory(file, plan);
    snapshots.push(snapshot);
    plans.push(plan);
  }
  const comparison = compareSnapshots(snapshots[0], snapshots[1], {
    allocConf,
    memoryLimit,
    startProcess: startOnSimulator(device),
    plans: [plans[0], plans[1]],
  });
  if (values.json === true) io.out(JSON.stringify({ files: operands, ...comparison }));
  else for (const line of compareLines(comparison, [operands[0], operands[1]])) io.out(line);
  return 0;
}
