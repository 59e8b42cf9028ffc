/**
 * The shadow follows memory whatever a hostile box reads back (Note [What a
 * box reads back], episode.ts): the HIP byte mismatch seed 7 found after
 * 120,000 HIP calls, as the few calls that make it. A box that takes the
 * write and reads back something else hid an import's handle (or an
 * export's fd) from the fuzzer, so the import got a shadow of its own and
 * the exporter's shadow kept bytes written through the import as stale.
 * The calls under test are the HIP model's own export and import entries;
 * the rest are plain HIP calls with the effects the model reports.
 */
import { describe, expect, it } from 'vitest';
import * as C from '../../../src/flavors/hip/constants.js';
import type { HipFlavor } from '../../../src/flavors/hip/hip.js';
import { FUZZ_GRANULE as G } from './cuda-model.js';
import { type CallSpec, Episode } from './episode.js';
import { HIP_MODEL } from './hip-model.js';
import { Random } from './random.js';

/** Every draw is `value`: 0.2 picks the first process, 0.9 the second, and both keep every argument valid. */
class FixedRandom extends Random {
  value = 0.9;
  override next(): number {
    return this.value;
  }
}

/** Takes a write and reads back something else for every key, as one of the fuzzer's hostile boxes does. */
const lyingBox = () => new Proxy({}, { get: () => 'not what was written' });

type Step = CallSpec<HipFlavor>['run'];
const FIRST = 0.2;
const SECOND = 0.9;

/** An episode whose calls are `steps`, in order, each on the process its draw picks. */
function scripted(steps: readonly [number, Step][]) {
  const rng = new FixedRandom(1);
  let next = 0;
  const script: CallSpec<HipFlavor> = {
    name: 'script',
    run: (ep, p, peer) => (steps[next++] as [number, Step])[1](ep, p, peer),
  };
  const ep = new Episode(rng, { ...HIP_MODEL, calls: [script] }, 0.12);
  return {
    ep,
    run: () => {
      for (const [value] of steps) {
        rng.value = value;
        ep.step();
      }
    },
  };
}

const modelCall = (name: string): Step => {
  const spec = HIP_MODEL.calls.find((c) => c.name === name);
  if (spec === undefined) throw new Error(`no ${name} in the HIP model`);
  return spec.run;
};

/** The same model call, given `box` where it asks the episode for one. */
const withBox =
  (name: string, box: object): Step =>
  (ep, p, peer) => {
    const own = ep.box;
    ep.box = (() => box) as typeof ep.box;
    try {
      return modelCall(name)(ep, p, peer);
    } finally {
      ep.box = own;
    }
  };

const create: Step = (ep, p) => {
  const b = { value: 0n };
  const prop = {
    type: C.hipMemAllocationTypePinned,
    requestedHandleTypes: C.hipMemHandleTypePosixFileDescriptor,
    location: { type: C.hipMemLocationTypeDevice, id: 0 },
  };
  return {
    result: p.hipMemCreate(b, G, prop, 0),
    onSuccess: () => ep.remember(ep.handles, p.runtime.pid, b.value),
  };
};

/** Reserve, map and grant read-write over `handle` (the process's handle of that origin); the va in `at`. */
const mapped =
  (origin: 'created' | 'imported', at: { va: bigint }): Step =>
  (_ep, p) => {
    const a = p.runtime.describe().allocations.find((x) => x.origin === origin && x.mapRefs === 0);
    if (a === undefined) return { result: C.hipErrorInvalidValue };
    const b = { value: 0n };
    const codes = [p.hipMemAddressReserve(b, G, 0, 0n, 0)];
    at.va = b.value;
    codes.push(p.hipMemMap(b.value, G, 0, BigInt(a.handle), 0));
    codes.push(
      p.hipMemSetAccess(b.value, G, [{ location: { type: C.hipMemLocationTypeDevice, id: 0 }, flags: 3 }], 1),
    );
    return { result: codes.find((c) => c !== 0) ?? 0 };
  };

const write =
  (at: { va: bigint }, value: number): Step =>
  (_ep, p) => {
    const bytes = new Uint8Array(16).fill(value);
    return { result: p.hipMemcpyHtoD(at.va, bytes, 16), effects: { write: { va: Number(at.va), bytes } } };
  };

const read =
  (at: { va: bigint }): Step =>
  (_ep, p) => {
    const into = new Uint8Array(16);
    return {
      result: p.hipMemcpyDtoH(into, at.va, 16),
      effects: { read: { va: Number(at.va), into, size: 16 } },
    };
  };

describe('the fuzzer shadow follows memory past a box that reads back something else', () => {
  it('an import whose box lies shares its exporter’s shadow', () => {
    const theirs = { va: 0n };
    const mine = { va: 0n };
    const { ep, run } = scripted([
      [SECOND, create],
      [SECOND, modelCall('hipMemExportToShareableHandle')],
      [FIRST, withBox('hipMemImportFromShareableHandle', lyingBox())],
      [FIRST, mapped('imported', mine)],
      [SECOND, mapped('created', theirs)],
      [SECOND, write(theirs, 1)],
      [FIRST, write(mine, 2)],
      [SECOND, read(theirs)],
    ]);
    run();
    expect(ep.successes.get('script')).toBe(8);
    expect(ep.violations).toEqual([]);
    // The exporter's read was compared, byte by byte, with what the import wrote.
    expect(ep.comparedBytes).toBe(16);
    ep.finish();
    expect(ep.violations).toEqual([]);
  });

  it('an import of an fd whose export box lied shares the exporter’s shadow', () => {
    const direct = { va: 0n };
    const imported = { va: 0n };
    // 0.4 picks the first process, and with no fd pooled the import guesses fd 3, the first a process opens.
    const GUESS_FD_3 = 0.4;
    const { ep, run } = scripted([
      [FIRST, create],
      [FIRST, withBox('hipMemExportToShareableHandle', lyingBox())],
      [GUESS_FD_3, modelCall('hipMemImportFromShareableHandle')],
      [FIRST, mapped('created', direct)],
      [FIRST, mapped('imported', imported)],
      [FIRST, write(direct, 1)],
      [FIRST, write(imported, 2)],
      [FIRST, read(direct)],
    ]);
    run();
    expect(ep.successes.get('script')).toBe(8);
    expect(ep.violations).toEqual([]);
    expect(ep.comparedBytes).toBe(16);
    ep.finish();
    expect(ep.violations).toEqual([]);
  });
});
