/**
 * The snapshot reader's mutation fuzzer (snapshot-mutants.ts) on the
 * committed real snapshots, each of its rules shown able to fail by a
 * sabotaged reader, and the reader's guards against what a mutated length
 * or index could make it do.
 *
 * A deeper run: VMMKIT_MUTANTS=20 (times as many mutants) and
 * VMMKIT_MUTANT_SEED=n (another seed) in the environment.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

import { SnapshotError } from '../../src/replay/errors.js';
import { loadSnapshotFile, readSnapshotBytes, readSnapshotFile } from '../../src/replay/read/load.js';
import {
  Op,
  PickleError,
  PickleReader,
  type PickleValue,
  pickle,
  unpickle,
} from '../../src/replay/read/pickle/index.js';
import type { MemorySnapshot } from '../../src/replay/read/snapshot.js';
import { SnapshotReader } from '../../src/replay/read/snapshot-reader.js';
import { Random } from '../flavors/fuzz/random.js';
import { replay } from '../support/replay.js';
import {
  type FuzzOptions,
  fuzzSnapshots,
  MUTANT_RULES,
  type MutantBase,
  type MutantRule,
  mutantBase,
  mutate,
  READERS,
  type SnapshotReaders,
} from './snapshot-mutants.js';

const WILD = fileURLToPath(new URL('./fixtures/wild/', import.meta.url));
const BASES: MutantBase[] = readdirSync(WILD)
  .filter((f) => f.endsWith('.pickle.gz'))
  .sort()
  .map((name) => mutantBase(name, readFileSync(join(WILD, name))));
const SCALE = Number(process.env.VMMKIT_MUTANTS ?? 1);
const SEED = Number(process.env.VMMKIT_MUTANT_SEED ?? 20261206);

/** Mutants of each fixture: more of the small ones, so that each costs about the same bytes read. */
function mutantsOf(base: MutantBase): number {
  return Math.round(SCALE * Math.min(16, Math.max(1, 1e6 / base.pickle.length)));
}

describe('mutants of real snapshots', () => {
  it('each loads a snapshot replay can trust, or is refused with one typed line, by both readers alike', () => {
    let loaded = 0;
    const refused: Record<string, number> = {};
    for (const base of BASES) {
      const r = fuzzSnapshots([base], { seed: SEED, mutants: mutantsOf(base) });
      expect(r.violations, base.name).toEqual([]);
      loaded += r.loaded;
      for (const [kind, n] of Object.entries(r.refused)) refused[kind] = (refused[kind] ?? 0) + n;
    }
    // The mutants reach every way of being refused, and some still load.
    expect(loaded).toBeGreaterThan(0);
    expect(Object.keys(refused).sort()).toEqual([
      'PickleError:malformed',
      'PickleError:truncated',
      'PickleError:unsupported-opcode',
      'SnapshotError:corrupt-gzip',
      'SnapshotError:not-a-snapshot',
    ]);
  });
});

/** Small fixtures, read quickly, so that a time or memory limit is the sabotage's doing. */
const SMALL = BASES.filter((b) => b.pickle.length < 80_000);
const SMALL_RUN: FuzzOptions = { seed: 7, mutants: 10, slowMs: 100, memoryBytes: 256 * 2 ** 20 };

/** Readers that break one rule of Note [Mutant rules] each, where the real readers keep it (fresh per run). */
function sabotaged(rule: MutantRule): SnapshotReaders {
  let calls = 0;
  switch (rule) {
    case 'throw':
      // A reader whose refusals escape as a plain TypeError.
      return {
        ...READERS,
        streaming: (bytes) => {
          try {
            return readSnapshotBytes(bytes);
          } catch {
            throw new TypeError("Cannot read properties of undefined (reading 'length')");
          }
        },
      };
    case 'message':
      // A refusal that prints as more than one line.
      return {
        ...READERS,
        plain: (bytes) => {
          try {
            return READERS.plain(bytes);
          } catch (e) {
            throw new SnapshotError('not-a-snapshot', `${(e as Error).message}\n    at sabotage`);
          }
        },
      };
    case 'loose': {
      // A lax reader: what it cannot check it loads, with an address it could not read.
      const fallback = readSnapshotBytes(BASES.find((b) => b.name === 'mosaic-output.pickle.gz')!.gzip);
      return {
        ...READERS,
        streaming: (bytes) => {
          try {
            return readSnapshotBytes(bytes);
          } catch {
            return withAddress(fallback, -1);
          }
        },
      };
    }
    case 'slow':
      // A reader that spins, once.
      return {
        ...READERS,
        streaming: (bytes) => {
          if (calls++ === 3) for (const cpu = process.cpuUsage(); process.cpuUsage(cpu).user < 150_000; );
          return readSnapshotBytes(bytes);
        },
      };
    case 'memory':
      // A reader that, once, keeps a buffer as big as a mutated length might ask for.
      return {
        ...READERS,
        plain: (bytes) => {
          const s = READERS.plain(bytes);
          // Not enumerable: the comparison of the two readings need not copy it.
          if (calls++ === 0)
            Object.defineProperty(s, 'held', { value: new Uint8Array(300 * 2 ** 20).fill(1) });
          return s;
        },
      };
    case 'disagree':
      // A streaming reader that, where it can, loads the snapshot without its first event's address.
      return {
        ...READERS,
        streaming: (bytes) => {
          const s = readSnapshotBytes(bytes);
          return s.traces.some((t) => t.length > 0) ? withAddress(s, 0) : s;
        },
      };
  }
}

/** `s` with its first event's address set to `addr` (a copy of that trace). */
function withAddress(s: MemorySnapshot, addr: number): MemorySnapshot {
  const d = s.traces.findIndex((t) => t.length > 0);
  const traces = s.traces.map((t, i) =>
    i === d ? { ...t, addr: Float64Array.from(t.addr, (a, j) => (j === 0 ? addr : a)) } : t,
  );
  return { ...s, traces };
}

describe('mutants that load, replayed', () => {
  it("replay answers each, or ends in one of the project's named errors with a one-line message", () => {
    // JavaScript's own errors are a bug's; the project's name what went wrong (the CLI prints them, exit 1).
    const BUILT_IN = [
      'Error',
      'TypeError',
      'RangeError',
      'ReferenceError',
      'SyntaxError',
      'EvalError',
      'URIError',
    ];
    const failures: string[] = [];
    let replayed = 0;
    fuzzSnapshots(SMALL, {
      ...SMALL_RUN,
      mutants: 24,
      onLoaded: (snapshot, m) => {
        replayed++;
        try {
          replay(snapshot);
        } catch (e) {
          const name = e instanceof Error ? e.name : typeof e;
          const message = e instanceof Error ? e.message : String(e);
          if (BUILT_IN.includes(name) || /[\r\n]/.test(message))
            failures.push(`${m.fixture} seed ${m.seed} (${m.mutations}): ${name}: ${message.slice(0, 200)}`);
        }
      },
    });
    expect(failures).toEqual([]);
    expect(replayed).toBeGreaterThan(5);
  });
});

describe('mutants as files', () => {
  it('the three file readers agree on each: loaded by all, or refused by all with a typed error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vmmkit-mutants-'));
    try {
      const base = BASES.find((b) => b.name === 'sketchkv2-late-start.pickle.gz')!;
      const seen = new Set<string>();
      for (let seed = 1; seed <= 40; seed++) {
        const { bytes } = mutate(base, new Random(seed), seed % 2 === 0);
        const file = join(dir, `${seed}.pickle`);
        writeFileSync(file, bytes);
        const outcomes: string[] = [];
        for (const read of [
          () => readSnapshotBytes(bytes),
          () => readSnapshotFile(file),
          () => loadSnapshotFile(file),
        ]) {
          try {
            await read();
            outcomes.push('loaded');
          } catch (e) {
            expect(e instanceof SnapshotError || e instanceof PickleError, String(e)).toBe(true);
            outcomes.push('refused');
          }
        }
        // The streaming file reader meets a pickle's fault before a gzip one's, so only loaded-or-not must agree.
        expect(new Set(outcomes).size, `seed ${seed}: ${outcomes}`).toBe(1);
        seen.add(outcomes[0]);
      }
      expect([...seen].sort()).toEqual(['loaded', 'refused']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a gzip file whose CRC does not match is refused, though its pickle is whole', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vmmkit-mutants-'));
    try {
      const bytes = Buffer.from(BASES.find((b) => b.name === 'code-location-4dev-oom.pickle.gz')!.gzip);
      bytes[bytes.length - 8] ^= 0xff; // the trailer's CRC32
      const file = join(dir, 'bad-crc.pickle.gz');
      writeFileSync(file, bytes);
      expect(() => readSnapshotBytes(bytes)).toThrow(/gzip data does not inflate/);
      expect(() => readSnapshotFile(file)).toThrow(/gzip data does not inflate/);
      await expect(loadSnapshotFile(file)).rejects.toThrow(/gzip data does not inflate/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the fuzzer can fail', () => {
  it('the real readers keep every rule on the runs below, and some of their mutants load', () => {
    const r = fuzzSnapshots(SMALL, SMALL_RUN);
    expect(r.violations).toEqual([]);
    expect(r.loaded).toBeGreaterThan(0);
  });

  // sabotaged() has a case for each rule (the compiler checks its switch).
  for (const rule of MUTANT_RULES) {
    it(`a reader that breaks '${rule}' is caught`, () => {
      const found = fuzzSnapshots(SMALL, { ...SMALL_RUN, readers: sabotaged(rule) }).violations;
      expect(new Set(found.map((v) => v.rule))).toContain(rule);
      // A report names the fixture, the seed and what was done, to replay it.
      const first = found.find((v) => v.rule === rule)!;
      expect(first.fixture).toMatch(/\.pickle\.gz$/);
      expect(first.mutations).not.toBe('');
    });
  }
});

describe('what a mutated length or index cannot do', () => {
  /** A protocol 4 pickle: PROTO 4, `body`, STOP. */
  const pickleOf = (...body: number[]) => Uint8Array.from([Op.PROTO, 4, ...body, Op.STOP]);
  const u32 = (n: number) => [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24];

  it('a memo index far past the entries set is refused, not a 16 GiB memo', () => {
    const bytes = pickleOf(Op.NONE, Op.LONG_BINPUT, ...u32(0xffff_ffff));
    expect(() => unpickle(bytes)).toThrow(/memo index 4294967295 is far past the 0 entries set/);
    // An index a little past is a gap Python allows.
    expect(
      unpickle(pickleOf(Op.NONE, Op.LONG_BINPUT, ...u32(1000), Op.POP, Op.LONG_BINGET, ...u32(1000))),
    ).toBe(null);
  });

  it('a string or bytes longer than JavaScript holds is refused at its length, before its bytes', () => {
    const huge = [0, 0, 0, 0, 0, 0, 0, 0x40]; // 2^62
    for (const op of [Op.BINUNICODE8, Op.BINBYTES8]) {
      const r = new PickleReader();
      // Only the length has come: the reader refuses now rather than wait for 2^62 bytes.
      expect(() => r.write(Uint8Array.from([Op.PROTO, 4, op, ...huge]))).toThrow(PickleError);
    }
    const r = new SnapshotReader();
    expect(() => r.write(Uint8Array.from([Op.PROTO, 4, Op.BINUNICODE, ...u32(0xffff_fff0)]))).toThrow(
      /more than a JavaScript value can hold/,
    );
  });

  it('a long integer of 256 KiB reads in linear time', () => {
    const n = 256 * 1024;
    const bytes = new Uint8Array(n).fill(0x5a);
    const t0 = performance.now();
    const v = unpickle(
      Buffer.concat([Uint8Array.from([Op.PROTO, 4, Op.LONG4, ...u32(n)]), bytes, Uint8Array.of(Op.STOP)]),
    );
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(typeof v === 'bigint' && v.toString(16)).toBe('5a'.repeat(n));
  });

  it('many memoized dicts turned into Maps cost linear time, and BINGET gives the Map', () => {
    // 20,000 memoized dicts, each then given an integer key: the reader must not rescan the memo each time.
    const dicts = Array.from({ length: 20_000 }, (_, i) => new Map<PickleValue, PickleValue>([[i, i]]));
    const t0 = performance.now();
    const v = unpickle(pickle([...dicts, ...dicts])) as Map<number, number>[];
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(v.length).toBe(40_000);
    expect(v[20_000 + 123]).toBe(v[123]);
    expect(v[123]).toEqual(new Map([[123, 123]]));
  });

  it("allocator_settings that holds itself, or nests deeper than PyTorch's ever do, is refused", () => {
    // { 'device_traces': [], 'allocator_settings': d } where d['d'] is d itself.
    const cyclic = pickleOf(
      Op.EMPTY_DICT,
      Op.MARK,
      Op.SHORT_BINUNICODE,
      13,
      ...Buffer.from('device_traces'),
      Op.EMPTY_LIST,
      Op.SHORT_BINUNICODE,
      18,
      ...Buffer.from('allocator_settings'),
      Op.EMPTY_DICT,
      Op.BINPUT,
      0,
      Op.SHORT_BINUNICODE,
      1,
      ...Buffer.from('d'),
      Op.BINGET,
      0,
      Op.SETITEM,
      Op.SETITEMS,
    );
    expect(() => readSnapshotBytes(cyclic)).toThrow(
      /'allocator_settings' holds the same container twice, or itself/,
    );
    expect(() => READERS.plain(cyclic)).toThrow(
      /'allocator_settings' holds the same container twice, or itself/,
    );
    let deep: PickleValue = 1;
    for (let i = 0; i < 40; i++) deep = [deep];
    expect(() => readSnapshotBytes(pickle({ device_traces: [], allocator_settings: { deep } }))).toThrow(
      /nests deeper than 16 levels/,
    );
  });

  it('a string in a message is one line: control characters are escaped', () => {
    const bytes = pickle({ device_traces: [[{ action: 'alloc', addr: 'a\r\nb', size: 1 }]] });
    expect(() => readSnapshotBytes(bytes)).toThrow(
      "device_traces[0][0].addr is a string ('a\\u000d\\u000ab')",
    );
  });
});
