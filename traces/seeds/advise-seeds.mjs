// The advice traces/seeds/record.py --run checks: for each workload, a memory limit set from seed 0's
// reference run (LIMIT_SHARE of its max_memory_reserved, rounded down to 2 MiB), `vmmkit advise` on
// seed 0's snapshot alone under that limit (the CLI, as users call it), and the runs to make on every
// seed under that limit: the default allocator, the recommended setting, and the next settings of the
// ranking that fit (up to EXTRA of them). Beside each run, vmmkit's own prediction for that seed,
// from that seed's snapshot (`vmmkit replay --stop-at-oom`: PyTorch raises at the first OOM), made
// before the device call.
//
//   npm run build && node traces/seeds/advise-seeds.mjs > traces/seeds/advice.json
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = fileURLToPath(new URL('../../', import.meta.url));
const cli = `${root}dist/src/cli/main.js`;
const MIB = 2 ** 20;
const LIMIT_SHARE = 0.92;
const EXTRA = 2;

const refs = JSON.parse(readFileSync(`${here}references.json`, 'utf8'));
const vmmkit = (args) => JSON.parse(execFileSync('node', [cli, ...args, '--json'], { maxBuffer: 1 << 30, encoding: 'utf8' }));
const git = (args) => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8' }).trim();

const workloads = [...new Set(refs.references.map((r) => r.workload))];
const out = {
  script: 'traces/seeds/advise-seeds.mjs',
  date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  vmmkitCommit: git(['rev-parse', 'HEAD']),
  srcChangedSinceCommit: git(['status', '--porcelain', '--', 'src']) !== '',
  limitRule: `${LIMIT_SHARE} of seed 0's max_memory_reserved (default allocator, no limit), rounded down to 2 MiB`,
  limits: {},
  advice: {},
  runs: [],
  predictions: [],
};
for (const w of workloads) {
  const seeds = refs.references.filter((r) => r.workload === w).sort((a, b) => a.seed - b.seed);
  const ref0 = seeds.find((r) => r.seed === 0);
  if (!ref0?.file) continue;
  const limit = Math.floor((LIMIT_SHARE * ref0.maxMemoryReserved) / (2 * MIB)) * 2 * MIB;
  out.limits[w] = limit;
  const a = vmmkit(['advise', `${here}${ref0.file}`, '--memory-limit', `${limit / MIB}MiB`]);
  const pick = (c) => ({
    allocConf: c.allocConf, peakReservedBytes: c.peakReservedBytes, fits: c.fits, headroomBytes: c.headroomBytes,
    tight: c.tight, equivalent: c.equivalent,
  });
  const settings = [];
  if (a.recommended) settings.push(a.recommended.allocConf);
  const seen = new Set([...(a.recommended?.equivalent ?? []), ...settings]);
  for (const c of a.candidates ?? []) {
    if (settings.length >= 1 + EXTRA) break;
    if (!c.fits || c.allocConf === '' || seen.has(c.allocConf)) continue;
    settings.push(c.allocConf);
    for (const e of [c.allocConf, ...(c.equivalent ?? [])]) seen.add(e);
  }
  out.advice[w] = {
    snapshot: ref0.file,
    memoryLimit: limit,
    command: `vmmkit advise ${ref0.file} --memory-limit ${limit / MIB}MiB --json`,
    verdict: a.verdict,
    recommended: a.recommended ? pick(a.recommended) : null,
    recorded: a.recorded,
    ranked: (a.candidates ?? []).slice(0, 12).map(pick),
    run: settings,
  };
  const labels = [['default', null], ...settings.map((s, i) => [i === 0 ? 'recommended' : `next${i}`, s])];
  for (const r of seeds) {
    for (const [label, conf] of labels) {
      out.runs.push({ workload: w, seed: r.seed, label, allocConf: conf, memoryLimit: limit });
      const args = ['replay', `${here}${r.file}`, '--allocator', 'pytorch', '--memory-limit', `${limit / MIB}MiB`, '--stop-at-oom'];
      if (conf) args.push('--alloc-conf', conf);
      const p = vmmkit(args).allocators[0];
      out.predictions.push({
        workload: w, seed: r.seed, label, allocConf: conf, memoryLimit: limit,
        predictedPeakReservedBytes: p.peakReservedBytes, predictedOoms: p.ooms,
        predictedOomEvent: p.firstOom ? p.firstOom.event : null,
      });
    }
  }
}
process.stdout.write(`${JSON.stringify(out, null, 1)}\n`);
