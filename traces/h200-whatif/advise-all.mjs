// What `vmmkit advise` recommends for each workload's reference snapshot, with no limit and under the
// limit the native allocator ran out at (the expandable run's peak, `limit-espeak`): the settings
// `record.py --verify` then runs under PyTorch on the H200.
//
//   npm run build && node traces/h200-whatif/advise-all.mjs > traces/h200-whatif/advice.json
//
// Each entry: { workload, advised ('recommended'; or 'lowest': the lowest peak among the settings equal to it
// within advise's tolerance, when that is another; advice.json's older entries say 'simplest': the fewest keys within 2%),
// allocConf, memoryLimit, predictedPeakReservedBytes, predictedFits }.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const { advise } = await import(join(here, '../../dist/src/replay/advise/advise.js'));
const { readSnapshotFile } = await import(join(here, '../../dist/src/replay/read/load.js'));

const results = JSON.parse(readFileSync(join(here, 'results.json'), 'utf8'));
const limitOf = (workload, label) =>
  results.runs.find((r) => r.workload === workload && r.label === label)?.allowedBytes ?? null;

const out = [];
for (const workload of Object.keys(results.workloads)) {
  const snapshot = readSnapshotFile(join(here, `${workload}--reference.pickle.gz`));
  for (const memoryLimit of [null, limitOf(workload, 'limit-espeak')]) {
    const advice = await advise(snapshot, { memoryLimit: memoryLimit ?? undefined });
    for (const [advised, r] of [
      ['recommended', advice.recommended],
      ['lowest', advice.lowest],
    ]) {
      // Nothing fits: nothing to run.
      if (r === null) continue;
      out.push({
        workload,
        advised,
        allocConf: r.allocConf,
        memoryLimit,
        predictedPeakReservedBytes: r.peakReservedBytes,
        predictedFits: r.fits,
      });
    }
  }
}
process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);
