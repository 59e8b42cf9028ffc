// Prints the README's replay tables (markdown) from committed result files, so the figures quoted are
// the files' own: node scripts/results-tables.mjs bench/results/h200-replay.json [more files...]
import { readFileSync } from 'node:fs';

const MiB = 2 ** 20;
for (const path of process.argv.slice(2)) {
  const r = JSON.parse(readFileSync(path, 'utf8'));
  console.log(`\n${path}: ${r.dir ?? 'traces/h200'}, ${r.gpu}, ${r.date}\n`);
  console.log('| trace | peak requested | allocator | reserved / requested (sim) | est. driver (sim) | on the H200: reserved, device used at peak | driver est. / measured |');
  console.log('|---|---|---|---|---|---|---|');
  for (const t of r.results) {
    if (!t.trace.endsWith('-expandable.pickle.gz') && !t.trace.endsWith('-native.pickle.gz')) continue;
    for (const a of t.allocators) {
      const s = a.simulator;
      const g = a.gpu;
      const gpu =
        g === null
          ? '-'
          : `${(g.peakReservedBytes / MiB).toFixed(0)} MiB, ${(g.deviceUsedAtPeakBytes / MiB).toFixed(0)} MiB | ${(g.estimatedDriverTimeUs / 1000).toFixed(1)} / ${(g.measuredDriverTimeUs / 1000).toFixed(1)} ms`;
      console.log(
        `| ${t.trace.replace('.pickle.gz', '')} | ${(t.peakRequestedBytes / MiB).toFixed(0)} MiB | ${a.name} | ${s.ratio.toFixed(4)} | ${(s.estimatedDriverTimeUs / 1000).toFixed(1)} ms | ${gpu} |`,
      );
    }
  }
}
