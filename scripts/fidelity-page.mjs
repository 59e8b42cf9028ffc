#!/usr/bin/env node
/**
 * Writes docs/FIDELITY.md from the result files, so that no figure on that
 * page is typed by hand: per suite, its cases, how many agree, how many are
 * listed gaps (each list read from the file that keeps it), when the figure
 * was recorded and the file that holds it.
 *
 *   node scripts/fidelity-page.mjs            write docs/FIDELITY.md
 *   node scripts/fidelity-page.mjs --check    exit 1 when the committed page differs from what this writes
 *
 * test/package/fidelity-page.test.ts runs --check's comparison in `npm test`.
 * Nothing here runs vmmkit: a suite whose figures are computed by a test on
 * every run (no result file) names that test instead of a date.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const PAGE = 'docs/FIDELITY.md';

const json = (path) => JSON.parse(readFileSync(join(root, path), 'utf8'));
const text = (path) => readFileSync(join(root, path), 'utf8');
const day = (iso) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
const link = (path) => `[\`${path}\`](../${path})`;

/** The keys of one `export const NAME ... = { ... };` object literal of a TypeScript file. */
function keysOf(source, name) {
  const start = source.indexOf(`export const ${name}`);
  if (start < 0) throw new Error(`${name} not found`);
  const body = source.slice(source.indexOf('{', source.indexOf('=', start)), source.indexOf('\n};', start));
  return [...body.matchAll(/^ {2}'([^']+)':/gm)].map((m) => m[1]);
}

/** The keys of `const NAME: Record<string, string> = { ... };` in a test file. */
function recordKeys(source, name) {
  const start = source.indexOf(`const ${name}`);
  if (start < 0) throw new Error(`${name} not found`);
  const body = source.slice(source.indexOf('{', source.indexOf('=', start)), source.indexOf('\n};', start));
  return [...body.matchAll(/^ {2}'([^']+)':/gm)].map((m) => m[1]);
}

/** Counts of a vitest transcript's rows per test file: passed, skipped, failed. */
function vitestRows(path) {
  const rows = new Map();
  const plain = text(path).replace(/\x1b\[[0-9;]*m/g, '');
  for (const line of plain.split('\n')) {
    const m = /^ +([✓↓×✗]) (test\/\S+)/.exec(line);
    if (!m) continue;
    const counts = rows.get(m[2]) ?? { passed: 0, skipped: 0, failed: 0 };
    if (m[1] === '✓') counts.passed++;
    else if (m[1] === '↓') counts.skipped++;
    else counts.failed++;
    rows.set(m[2], counts);
  }
  const start = /Start at +(\d\d:\d\d:\d\d)/.exec(plain)?.[1];
  return { rows, start };
}

export function fidelityPage() {
  const driver = json('conformance/results/h200-driver.json');
  const prove = json('conformance/results/h200-vmmkit-prove.json');
  const sharing = json('conformance/results/h200-sharing.json');
  const whatif = json('traces/h200-whatif/results.json');
  const verified = json('traces/h200-whatif/verified.json');
  const divergences = text('conformance/cuda/known-divergences.ts');
  const simList = keysOf(divergences, 'KNOWN_DIVERGENCES');
  const backendList = keysOf(divergences, 'KNOWN_BACKEND_DIVERGENCES');
  const flavors = vitestRows('conformance/results/h200-flavors.txt');
  const asRecordedTest = text('test/replay/as-recorded.test.ts');
  const notReproduced = recordKeys(asRecordedTest, 'KNOWN');
  // Ours from the H200, and other people's (the test reads the same folders).
  const snapshotDirs = ['traces/h200', 'traces/h200-heldout', 'traces/h200-whatif', 'test/replay/fixtures/wild'];
  const snapshots = snapshotDirs.flatMap((d) =>
    readdirSync(join(root, d)).filter((f) => f.endsWith('.pickle.gz') || f.endsWith('.pickle')),
  );

  // The recorded H200 traces replayed by the model of the allocator that recorded each (its file names the mode).
  const replays = ['bench/results/h200-replay.json', 'bench/results/h200-replay-heldout.json'].map((path) => ({
    path,
    file: json(path),
  }));
  const traces = replays.flatMap(({ file }) => file.results);
  const sameAsPytorch = traces.filter((t) => {
    const mode = t.trace.includes('expandable') ? 'pytorch-expandable' : 'pytorch-native';
    return t.allocators.find((a) => a.name === mode)?.simulator.peakReservedBytes === t.pytorchMaxMemoryReserved;
  }).length;
  const onGpu = traces.flatMap((t) => t.allocators.filter((a) => a.gpu));
  const gpuExact = onGpu.filter((a) => a.gpu.peakReservedBytes === a.gpu.deviceUsedAtPeakBytes).length;
  const replayDays = [...new Set(replays.map(({ file }) => day(file.date)))].join(', ');
  const replayLinks = replays.map(({ path }) => link(path)).join(', ');
  // Advice from one seed's snapshot, run under PyTorch on every seed (traces/seeds).
  const seeds = json('traces/seeds/results.json');
  const advisedRuns = seeds.summary
    .filter((x) => x.label !== 'default')
    .flatMap((x) => Object.values(x.seeds));
  const advisedHeld = advisedRuns.filter((x) => x.ended === 'ok').length;
  const seedPredictions = seeds.predictionsMatched;
  const seedExact = seedPredictions.filter((x) => x.sameVerdict && x.relativeError === 0).length;
  const seedWorst = Math.max(...seedPredictions.map((x) => Math.abs(x.relativeError)));
  const cases = driver.caseCount;
  const conf = prove.conformance;
  const share = sharing.summary;
  const runs = whatif.runs;
  // The kinds test/replay/h200-whatif.test.ts predicts (its PREDICTED set).
  const predictedKinds = /const PREDICTED[^=]*= new Set\(\[([^\]]*)\]/.exec(text('test/replay/h200-whatif.test.ts'))[1];
  const kinds = [...predictedKinds.matchAll(/'(\w+)'/g)].map((m) => m[1]);
  const predicted = runs.filter((r) => kinds.includes(r.kind));
  const ooms = runs.filter((r) => r.ended !== 'ok').length;
  const within = verified.verified.filter((v) => v.withinTwoPercent).length;
  const exact = verified.verified.filter((v) => v.relativeError === 0).length;
  const flavorRow = (file) => flavors.rows.get(file) ?? { passed: 0, skipped: 0, failed: 0 };
  const hip = flavorRow('test/flavors/hip/conformance.test.ts');
  const acl = flavorRow('test/flavors/acl/conformance.test.ts');
  const proveDay = day(prove.date);

  const rows = [
    [
      'CUDA driver cases: the simulated CUDA flavour against the H200 transcript',
      cases,
      cases - simList.length,
      `${simList.length} (\`KNOWN_DIVERGENCES\`)`,
      `${day(driver.recordedAt)} (last of ${driver.runs.length} runs)`,
      `${link('conformance/results/h200-driver.json')}; ${link('conformance/cuda/known-divergences.ts')}`,
    ],
    [
      'CUDA driver cases: vmmkit over the real driver against the raw driver',
      conf.cases,
      conf.agree,
      `${Object.keys(conf.disagreeing).length} (${simList.length} \`KNOWN_DIVERGENCES\` + ${backendList.filter((n) => !simList.includes(n)).length} \`KNOWN_BACKEND_DIVERGENCES\`)`,
      proveDay,
      link('conformance/results/h200-vmmkit-prove.json'),
    ],
    [
      'the backend contract on the H200',
      prove.contract.total,
      prove.contract.passed,
      prove.contract.total - prove.contract.passed,
      proveDay,
      link('conformance/results/h200-vmmkit-prove.json'),
    ],
    [
      `sharing between real processes (${share.scenarios} scenarios, three front ends)`,
      share.checks,
      share.passed,
      share.checks - share.passed,
      day(sharing.recordedAt),
      link('conformance/results/h200-sharing.json'),
    ],
    ...[
      ['HIP', hip],
      ['ACL', acl],
    ].map(([vendor, t]) => [
      `${vendor} conformance table over the real driver`,
      t.passed + t.skipped + t.failed,
      t.passed,
      `${t.skipped} skipped with their reasons, ${t.failed} failed`,
      `started ${flavors.start} UTC (the transcript names no day)`,
      link('conformance/results/h200-flavors.txt'),
    ]),
    [
      "PyTorch's peak reserved on the recorded H200 traces, replayed by the model of the allocator that recorded each",
      traces.length,
      sameAsPytorch,
      traces.length - sameAsPytorch,
      replayDays,
      replayLinks,
    ],
    [
      "each allocator's peak on the GPU against the device's own used memory then (cuMemGetInfo), to the byte",
      onGpu.length,
      gpuExact,
      onGpu.length - gpuExact,
      replayDays,
      replayLinks,
    ],
    [
      "PyTorch's own runs under other settings and limits: each run's peak reserved and OOM verdict predicted from its workload's reference snapshot",
      predicted.length,
      `${predicted.length}, within 2% (asserted on every test run by \`test/replay/h200-whatif.test.ts\`)`,
      0,
      day(whatif.date),
      link('traces/h200-whatif/results.json'),
    ],
    [
      "advise's recommendations run under PyTorch 2.11 (reserved within 2% of the prediction)",
      verified.verified.length,
      `${within} (${exact} to the byte)`,
      verified.verified.length - within,
      day(verified.date),
      link('traces/h200-whatif/verified.json'),
    ],
    [
      `advice from one seed's snapshot, run under PyTorch on every seed of its workload (${seeds.gpu}): did not run out`,
      advisedRuns.length,
      advisedHeld,
      advisedRuns.length - advisedHeld,
      day(seeds.date),
      link('traces/seeds/results.json'),
    ],
    [
      "vmmkit's prediction of each of those runs, and of PyTorch's defaults, from that seed's own snapshot: the same verdict and peak",
      seedPredictions.length,
      `${seedPredictions.filter((x) => x.sameVerdict).length} verdicts, ${seedExact} peaks to the byte (the rest within ${(seedWorst * 100).toFixed(2)}%)`,
      0,
      day(seeds.date),
      link('traces/seeds/results.json'),
    ],
    [
      'committed real snapshots replayed as recorded (peak, segment events, OOMs)',
      snapshots.length,
      snapshots.length - notReproduced.length,
      `${notReproduced.length} (\`KNOWN\` in the test)`,
      'every test run',
      `${link('test/replay/as-recorded.test.ts')}, over ${snapshotDirs.map((d) => `\`${d}\``).join(', ')}`,
    ],
  ];

  const table = [
    '| suite | cases | agree | listed gaps | recorded | result file |',
    '|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ];

  const speed = speedRows();
  const speedTable = [
    '| what | measured | target | met | recorded | result file |',
    '|---|---|---|---|---|---|',
    ...speed.map((r) => `| ${r.join(' | ')} |`),
  ];

  const byReason = new Map();
  for (const name of backendList) {
    // The builder that writes the entry (wholeHandleMaps, createdContextHeap, faultNotSent), or its own.
    const line = divergences.slice(divergences.indexOf(`'${name}':`)).split('\n')[0];
    const reason = /^'[^']+': (\w+)\(/.exec(line)?.[1];
    byReason.set(reason ?? 'its own reason', (byReason.get(reason ?? 'its own reason') ?? 0) + 1);
  }

  const lines = [
    '# Fidelity',
    '',
    '<!-- Written by scripts/fidelity-page.mjs from the result files it names; do not edit by hand:',
    '     run `node scripts/fidelity-page.mjs` after a result file changes. -->',
    '',
    "How closely vmmkit answers what the real thing answers, suite by suite. A case that differs is either a",
    'failure or a listed gap with its reason; a listed gap that starts agreeing fails its test, so each list can',
    'only shrink. Each figure is read from the file in its row, recorded on the date beside it.',
    '',
    ...table,
    '',
    '## The suites',
    '',
    `- **CUDA driver cases.** ${cases} edge cases of the driver API, recorded through a raw binding with no`,
    `  vmmkit logic on an ${driver.gpu.name} (driver ${driver.gpu.driverVersion}) in ${driver.runs.length} runs, each case naming`,
    `  its run. \`test/conformance/cuda-agreement.test.ts\` holds the simulator to every case not listed in`,
    `  \`KNOWN_DIVERGENCES\` and fails when a listed one starts agreeing. Over the real driver`,
    `  (\`conformance/gpu/prove.ts\`), the second list, \`KNOWN_BACKEND_DIVERGENCES\`, names where vmmkit's`,
    `  answer differs from the raw driver's by design, each entry naming every step that differs and how,`,
    `  grouped by reason: ${[...byReason.entries()].map(([reason, n]) => `${n} \`${reason}\``).join(', ')}.`,
    '  `test/conformance/backend-divergences.test.ts` holds the latest run to both lists (a listed case that',
    "  agrees, or differs otherwise, fails) and today's backend, over `conformance/gpu/fake-driver.ts`, to that",
    '  run.',
    `- **Sharing.** The scenarios of \`test/sharing/sim-sharing.test.ts\`, each peer a child process over the`,
    `  CUDA backend, for CUDA, HIP and ACL; the simulator's answers to the same scenarios are held to this file`,
    '  by the test.',
    `- **HIP and ACL tables.** The rule-by-rule conformance tables of \`test/flavors/{hip,acl}\`, run with`,
    '  `VMMKIT_TEST_BACKEND=cuda` on the H200; the skipped rows are facts of other parts (an MI300X\'s 4 KiB',
    '  granularity, two devices, the simulator\'s own counters), each skipped with its reason.',
    `- **Recorded traces.** ${traces.length} recordings of five workloads on the H200 (\`traces/h200\` and the held-out`,
    '  `traces/h200-heldout`), each under the allocator it was recorded with, replayed by `bench/gpu-replay.ts` on',
    "  the simulator and on the GPU in one run; PyTorch's own `max_memory_reserved` is each trace's",
    '  `pytorch-reserved.json`.',
    `- **What-if ground truth.** \`traces/h200-whatif/results.json\`: ${runs.length} runs of ${Object.keys(whatif.workloads).length} workloads under`,
    `  PyTorch ${whatif.torch} on an ${whatif.gpu} (${day(whatif.date)}), ${ooms} of them ended in an OOM, each with its`,
    '  `max_memory_reserved`. Replay\'s prediction for each is recomputed from the workload\'s reference snapshot by',
    '  `test/replay/h200-whatif.test.ts` on every test run; the row above is the second step, advice run back',
    '  under PyTorch.',
    `- **Advice on the next run.** \`traces/seeds\`: three workloads whose shapes follow a data seed, recorded`,
    `  under five seeds; \`vmmkit advise\` was asked about seed 0's snapshot alone, under a limit set from seed 0's`,
    '  run, and its advice ran under PyTorch on every seed under that limit, beside PyTorch\'s defaults (its',
    '  README has each run).',
    `- **As recorded.** Every answer starts by replaying the snapshot as it was recorded; the test does that on`,
    `  each of the ${snapshots.length} committed real snapshots; the ${notReproduced.length} it lists as not reproduced carry their reasons`,
    '  there, and one that starts reproducing fails the test.',
    '',
    '## Speed',
    '',
    'Each target is a ratio of two things measured side by side in one run of its benchmark, on the machine and',
    'at the load its result file records (a shared 2-core machine: noise only adds time, so each side is its',
    'best of the rounds run). The commands: `node dist/bench/advise.js --rounds 5 --write`,',
    '`node dist/bench/big-snapshot-bench.js --write`, `node dist/bench/web-page.js --big --write`.',
    '',
    ...speedTable,
    '',
  ];
  return `${lines.join('\n')}`;
}

/** The least of the traces' floors (bench/advise.ts), or that the file has none. */
function floorOf(traces) {
  const floors = traces.map((r) => r.floorRatio).filter((f) => typeof f === 'number');
  return floors.length === 0 ? 'not in the file' : `${Math.min(...floors).toFixed(2)}x`;
}

/** The speed targets' rows, from the benchmarks' result files (a figure the file lacks is said to be missing). */
function speedRows() {
  const x = (n, digits = 2) => (n === null || n === undefined ? 'not in the file' : `${n.toFixed(digits)}x`);
  const met = (ok) => (ok ? 'yes' : 'no');
  const at = (file) => `${day(file.date)}, load ${file.loadAverage?.[0] ?? '?'}`;
  const advise = json('bench/results/advise.json');
  const big = json('bench/results/big-snapshot.json');
  const web = json('bench/results/web.json');
  const traces = advise.rows.filter((r) => !r.trace.startsWith('bench-'));
  const worst = traces.reduce((a, r) => (r.ratio > a.ratio ? r : a), traces[0]);
  const million = advise.rows.find((r) => r.trace.startsWith('bench-'));
  const target = advise.target ?? 5;
  const rows = [
    [
      `advise's whole search against one replay through every default allocator (the engine's, as issue 28 set the target): the worst of ${traces.length} committed traces (${worst.trace}); beside it, the least floor of the ${traces.length} (each setting the search replayed, once in full with no search around them: Note [The search's floor] in bench/advise.ts)`,
      `${x(worst.ratio)}; floor ${floorOf(traces)}`,
      `at most ${target}x`,
      met(traces.every((r) => r.ratio <= target)),
      at(advise),
      link('bench/results/advise.json'),
    ],
  ];
  if (million !== undefined)
    rows.push([
      `the same on a ${million.events.toLocaleString('en-US')}-event snapshot`,
      x(million.ratio),
      `at most ${target}x`,
      met(million.ratio <= target),
      at(advise),
      link('bench/results/advise.json'),
    ]);
  // Note [The commands side by side] (bench/advise.ts): both commands reproduce the recording first.
  const commands = traces.filter((r) => r.commandRatio !== undefined);
  if (commands.length > 0) {
    const worstCommand = commands.reduce((a, r) => (r.commandRatio > a.commandRatio ? r : a), commands[0]);
    rows.push([
      `\`vmmkit advise\` against \`vmmkit replay\`, each the whole command in its own process on the same file: the worst of ${commands.length} committed traces (${worstCommand.trace}); the ${million?.events.toLocaleString('en-US') ?? '?'}-event snapshot`,
      `${x(worstCommand.commandRatio)}; ${x(million?.commandRatio)}`,
      `at most ${target}x (Note [The commands side by side])`,
      met(
        commands.every((r) => r.commandRatio <= target) &&
          million?.commandRatio !== undefined &&
          million.commandRatio <= target,
      ),
      at(advise),
      link('bench/results/advise.json'),
    ]);
  }
  rows.push([
    `parse and native replay of a ${(big.pickleBytes / 2 ** 30).toFixed(1)} GiB snapshot against Python's pickle.load of it; peak RSS`,
    `${x(big.ratio, 3)}; ${big.replayNative.maxRssMiB} MiB`,
    `at most ${big.target.ratio}x; ${big.target.maxRssMiB} MiB`,
    met(big.met),
    at(big),
    link('bench/results/big-snapshot.json'),
  ]);
  const m = web.million;
  rows.push([
    `the page's answer to a ${m.events.toLocaleString('en-US')}-event snapshot in headless Chromium against \`vmmkit report\` of it`,
    x(m.pageOverCli),
    `at most ${m.target}x`,
    met(m.page.error === null && m.pageOverCli <= m.target),
    at(web),
    link('bench/results/web.json'),
  ]);
  rows.push([
    "the page's advice on it against `vmmkit report --advise`",
    x(m.adviceOverCli),
    `at most ${m.target}x`,
    met(m.adviceOverCli !== undefined && m.adviceOverCli !== null && m.adviceOverCli <= m.target),
    at(web),
    link('bench/results/web.json'),
  ]);
  const b = web.big;
  if (b !== null && b !== undefined) {
    rows.push([
      `the ${(b.fileBytes / 2 ** 30).toFixed(1)} GiB snapshot loaded and answered in the page: memory the browser's processes added`,
      `${b.page.addedRssMiB} MiB${b.page.error === null ? '' : `; ${b.page.error}`}`,
      `under ${b.rssTargetMiB} MiB, no crash`,
      met(b.rssMet),
      at(web),
      link('bench/results/web.json'),
    ]);
    rows.push([
      '`vmmkit report` of it against replaying it through the same allocators: `vmmkit replay`; the engine alone, which reproduces nothing',
      `${x(b.reportOverReplayCommand)}; ${x(b.reportOverEngineReplay)}`,
      `at most ${b.reportTarget}x \`vmmkit replay\` (Note [The report against a replay])`,
      met(b.reportMet),
      at(web),
      link('bench/results/web.json'),
    ]);
  }
  return rows;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const page = fidelityPage();
  if (process.argv.includes('--check')) {
    const committed = readFileSync(join(root, PAGE), 'utf8');
    if (committed !== page) {
      console.error(`${PAGE} is not what scripts/fidelity-page.mjs writes now: run it`);
      process.exit(1);
    }
  } else {
    writeFileSync(join(root, PAGE), page);
    console.log(`wrote ${PAGE}`);
  }
}
