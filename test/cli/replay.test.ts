import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findCudaDriver } from '../../src/backends/cuda/driver.js';
import { runCli } from '../../src/cli/cli.js';
import { replayCommand } from '../../src/cli/replay.js';
import { readPickle } from '../../src/replay/read/load.js';
import { isPickleDict } from '../../src/replay/read/pickle/index.js';
import { fixture } from '../replay/helpers.js';
import { ONE_STEP } from '../replay/support/one-step-allocator.js';
import { capture } from '../support/capture.js';

const testCosts = fixture('test-driver-costs.json');

interface ReplayJson {
  trace: Record<string, number>;
  allocators: { ooms: number }[];
}

/** `vmmkit replay` with the one-step test allocator and the test cost table. */
async function replayCli(args: string[]) {
  const c = capture();
  const code = await replayCommand(c.io, args, { registry: [ONE_STEP], defaultCosts: testCosts });
  return { code, ...c };
}

describe('vmmkit replay', () => {
  it('--json prints exactly one object with the trace and each allocator', async () => {
    const { code, out, err } = await replayCli([fixture('hand.pickle'), '--json']);
    expect(code).toBe(0);
    expect(err).toEqual([]);
    expect(out).toHaveLength(1);
    const j = JSON.parse(out[0]);
    expect(j.trace).toMatchObject({
      events: 9,
      allocs: 3,
      peakRequestedBytes: 4000,
      durationUs: 80,
      devices: 1,
    });
    expect(j.allocators).toHaveLength(1);
    expect(j.allocators[0]).toMatchObject({
      name: 'one-step',
      peakReservedBytes: 4 * 1024 * 1024,
      ratio: (4 * 1024 * 1024) / 4000,
      utilization: 1,
      driverTimeUs: 210,
      driverTimeMeasured: false,
    });
    expect(j.allocators[0].driverCalls).toMatchObject({ cuMemAlloc: 3, cuMemFree: 3, cuMemMap: 0 });
    expect(typeof j.allocators[0].replayMs).toBe('number');
    expect(j.costTable.gpu).toContain('test fixture');
  });

  it('prints a table by default, and notes on stderr what it counted', async () => {
    const { code, out, err } = await replayCli([fixture('midrun.pickle.gz')]);
    expect(code).toBe(0);
    const text = out.join('\n');
    expect(text).toContain('trace: 4 events (1 allocs) on 1 device(s)');
    expect(text).toMatch(/one-step\s+6\.0 MiB\s+438\.857\s+1\.000\s+0\s+5\s+/);
    expect(err.join('\n')).toContain('the trace started mid-run: 2 block(s) live before its first event');
  });

  it('runs the registered allocators by default and each one named with --allocator', async () => {
    const all = capture();
    expect(await runCli(['replay', fixture('hand.pickle'), '--json'], all.io)).toBe(0);
    const names = JSON.parse(all.out.at(-1)!).allocators.map((a: { name: string }) => a.name);
    expect(names).toEqual(['pytorch-native', 'pytorch-expandable', 'vmmkit']);
    const one = capture();
    expect(await runCli(['replay', fixture('hand.pickle'), '--allocator', 'vmmkit', '--json'], one.io)).toBe(
      0,
    );
    expect(JSON.parse(one.out.at(-1)!).allocators.map((a: { name: string }) => a.name)).toEqual(['vmmkit']);
  });

  it('--fidelity compares segment events and offsets with the recording', async () => {
    const { code, out } = await replayCli([fixture('hand.pickle'), '--fidelity']);
    expect(code).toBe(0);
    const text = out.join('\n');
    expect(text).toContain('fidelity one-step device 0: segment events 0/1 recorded matched (6 replayed)');
    expect(text).toContain(
      'first difference: segment event 0 (trace event 0): recorded segment_alloc of 20971520 bytes, replayed segment_alloc of 2097152 bytes',
    );
  });

  const badInputs: [string, RegExp][] = [
    ['does-not-exist.pickle', /cannot read .*does-not-exist\.pickle: no such file/],
    ['truncated.pickle', /the pickle is truncated/],
    ['corrupt.pickle.gz', /the gzip data does not inflate/],
    ['not-a-dict.pickle', /not a memory snapshot: the pickle holds a list of 3, not a dict/],
    ['no-traces.pickle', /not a memory snapshot: the dict has no 'device_traces'/],
    ['unknown-action.pickle', /has unknown action 'teleport'/],
    [
      'bad-field.pickle',
      /device_traces\[0\]\[0\]\.size is a string \('512'\), expected a non-negative integer/,
    ],
    ['has-global.pickle', /unsupported pickle opcode STACK_GLOBAL \(0x93\) at offset \d+/],
  ];
  for (const [name, message] of badInputs) {
    it(`bad input ${name}: one line on stderr, exit 1, nothing on stdout`, async () => {
      const { code, out, err } = await replayCli([fixture(name), '--json']);
      expect(code).toBe(1);
      expect(out).toEqual([]);
      expect(err).toHaveLength(1);
      expect(err[0]).toMatch(message);
      expect(err[0]).toMatch(/^vmmkit replay: /);
      expect(err[0]).not.toContain('\n');
    });
  }

  it('counted inputs: a double free, a recorded OOM and an allocator OOM exit 0 with a note each', async () => {
    const cases: [string, RegExp, (j: ReplayJson) => void][] = [
      [
        'double-free.pickle',
        /1 free\(s\) of an address not live \(double frees\) were skipped/,
        (j) => expect(j.trace.unmatchedFrees).toBe(1),
      ],
      [
        'recorded-oom.pickle',
        /the trace records 1 OOM\(s\) of the recorded allocator/,
        (j) => expect(j.trace.recordedOoms).toBe(1),
      ],
      [
        'too-big.pickle',
        /one-step: 1 malloc\(s\) ran out of memory; those blocks were skipped/,
        (j) => expect(j.allocators[0].ooms).toBe(1),
      ],
    ];
    for (const [name, note, check] of cases) {
      const { code, out, err } = await replayCli([fixture(name), '--json']);
      expect(code, name).toBe(0);
      expect(err.join('\n'), name).toMatch(note);
      check(JSON.parse(out[0]));
    }
    const stop = await replayCli([fixture('too-big.pickle'), '--json', '--stop-at-oom']);
    expect(stop.err.join('\n')).toContain('stopped at the first');
    expect(JSON.parse(stop.out[0]).allocators[0].stoppedAtOom).toBe(true);
  });

  it('empty_cache() calls inferred from a recorded trace are noted; --no-empty-cache leaves them out', async () => {
    const trace = fixture('../../../traces/h200/phases_streams-native.pickle.gz');
    const on = capture();
    expect(await runCli(['replay', trace, '--allocator', 'pytorch-native', '--json'], on.io)).toBe(0);
    expect(on.err.join('\n')).toMatch(
      /\d+ empty_cache\(\) call\(s\) inferred from the recorded segment frees/,
    );
    const off = capture();
    expect(
      await runCli(['replay', trace, '--allocator', 'pytorch-native', '--json', '--no-empty-cache'], off.io),
    ).toBe(0);
    const [a, b] = [on, off].map((c) => JSON.parse(c.out[0]));
    expect(b.trace.inferredEmptyCaches).toBe(0);
    expect(a.trace.inferredEmptyCaches).toBeGreaterThan(0);
    // Without the calls the cache keeps every phase's segments: more is reserved.
    expect(b.allocators[0].peakReservedBytes).toBeGreaterThan(a.allocators[0].peakReservedBytes);
  });

  it.skipIf(findCudaDriver() !== undefined)(
    '--backend cuda without a CUDA driver is one line and exit 1',
    async () => {
      const { code, out, err } = await replayCli([fixture('hand.pickle'), '--backend', 'cuda', '--json']);
      expect(code).toBe(1);
      expect(out).toEqual([]);
      expect(err).toHaveLength(1);
      expect(err[0]).toMatch(/^vmmkit replay: CUDA driver unavailable/);
    },
  );

  it('usage mistakes exit 2 with the usage line', async () => {
    for (const args of [
      [],
      [fixture('hand.pickle'), fixture('hand.pickle')],
      [fixture('hand.pickle'), '--backend', 'tpu'],
      [fixture('hand.pickle'), '--frobnicate'],
      [fixture('hand.pickle'), '--allocator'],
      [fixture('hand.pickle'), '--allocator', 'jemalloc'],
    ]) {
      const { code, err } = await replayCli(args);
      expect(code, args.join(' ')).toBe(2);
      expect(err.join('\n')).toContain('usage: vmmkit replay <snapshot.pickle[.gz]>');
    }
    const unknown = await replayCli([fixture('hand.pickle'), '--allocator', 'jemalloc']);
    expect(unknown.err[0]).toContain("unknown allocator 'jemalloc' (known: one-step)");
  });

  it('without a cost table the driver time is null and a note says so; a bad --costs file is an error', async () => {
    const c = capture();
    expect(
      await replayCommand(c.io, [fixture('hand.pickle')], { registry: [ONE_STEP], defaultCosts: null }),
    ).toBe(0);
    expect(c.err.join('\n')).toContain('no driver cost table');
    const j = capture();
    await replayCommand(j.io, [fixture('hand.pickle'), '--json'], {
      registry: [ONE_STEP],
      defaultCosts: null,
    });
    expect(JSON.parse(j.out[0]).allocators[0].driverTimeUs).toBeNull();
    const bad = await replayCli([fixture('hand.pickle'), '--costs', fixture('hand.pickle')]);
    expect(bad.code).toBe(1);
    expect(bad.err[0]).toMatch(/cannot read cost table/);
  });

  it('a failed allocator run exits 1 after the others ran', async () => {
    const broken = {
      ...ONE_STEP,
      name: 'broken',
      create: () => {
        throw new Error('cannot start');
      },
    };
    const c = capture();
    const code = await replayCommand(c.io, [fixture('hand.pickle'), '--json'], {
      registry: [broken, ONE_STEP],
      defaultCosts: null,
    });
    expect(code).toBe(1);
    expect(c.err.join('\n')).toContain('broken: the run failed: Error: cannot start');
    expect(JSON.parse(c.out[0]).allocators[1].error).toBeNull();
  });

  it('progress goes to the progress hook when there is one, and is cleared at the end', async () => {
    const seen: number[] = [];
    const c = capture();
    await replayCommand({ ...c.io, progress: (f) => seen.push(f) }, [fixture('hand.pickle')], {
      registry: [ONE_STEP],
      defaultCosts: null,
    });
    expect(seen.at(-2)).toBe(1);
    expect(seen.at(-1)).toBe(-1);
  });
});

describe('vmmkit replay --export', () => {
  it('vmmkit replay --export writes one snapshot per allocator', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vmmkit-export-'));
    try {
      const err: string[] = [];
      const io = { out: () => {}, err: (l: string) => err.push(l) };
      const code = await replayCommand(io, [fixture('hand.pickle'), '--export', dir], {
        registry: [ONE_STEP],
        defaultCosts: null,
      });
      expect(code).toBe(0);
      expect(readdirSync(dir)).toEqual(['hand-one-step.pickle']);
      expect(err.join('\n')).toContain('wrote ');
      const value = readPickle(readFileSync(join(dir, 'hand-one-step.pickle')));
      expect(isPickleDict(value) && value.vmmkit_replay).toEqual({ allocator: 'one-step' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
