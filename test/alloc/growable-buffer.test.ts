import { describe, expect, it } from 'vitest';
import { AllocatorArgumentError, GrowPastMaximumError } from '../../src/alloc/errors.js';
import { type ChunkPolicy, GrowableBuffer } from '../../src/alloc/growable-buffer.js';
import { createMachine } from '../../src/backends/sim/machine.js';
import { VmmError } from '../../src/core/errors.js';
import { Runtime } from '../../src/core/runtime.js';
import { Access } from '../../src/core/types.js';
import { expectVmmError } from '../core/helpers.js';
import { faultySetup, G, MiB, pattern, smallDevice, state } from './vmmkit/helpers.js';

function h200(devices: ('H200' | ReturnType<typeof smallDevice>)[] = ['H200']) {
  const machine = createMachine({ devices });
  const rt = new Runtime(machine.spawn());
  return { machine, rt };
}

/** Two small devices, device 1 granted read access: the fault-injection tests' buffer, in chunks of 4 MiB. */
const TWO_DEVICES = [
  { device: 0, access: Access.ReadWrite },
  { device: 1, access: Access.Read },
];
const FIXED_4_MIB: ChunkPolicy = { kind: 'fixed', chunkSize: 2 * G };
/** The driver steps of a grow by three chunks of that buffer: each made and mapped, then access for each device. */
const GROW_BY_THREE_CHUNKS = ['create', 'map', 'create', 'map', 'create', 'map', 'setAccess', 'setAccess'];
function twoDeviceBuffer(initialSize: number) {
  const s = faultySetup([smallDevice(32, 'a'), smallDevice(32, 'b')]);
  const buf = new GrowableBuffer(s.rt, {
    maxSize: 40 * MiB,
    access: TWO_DEVICES,
    policy: FIXED_4_MIB,
    initialSize,
  });
  s.rt.write(0, buf.pointer + 4 * MiB, pattern(4096, 9));
  return { ...s, buf };
}

describe('GrowableBuffer', () => {
  it('keeps its pointer and its bytes while it grows, doubling by default', () => {
    const { rt } = h200();
    using buf = new GrowableBuffer(rt, { maxSize: 64 * MiB });
    const p = buf.pointer;
    expect(buf.size).toBe(0);
    expect(buf.capacity).toBe(0);
    buf.grow(100);
    expect(buf.capacity).toBe(G);
    const first = pattern(100, 1);
    rt.write(0, p, first);
    const sizes: number[] = [];
    for (let s = 3 * MiB; s <= 64 * MiB; s += 3 * MiB) {
      buf.grow(s);
      expect(buf.pointer).toBe(p);
      sizes.push(buf.capacity);
    }
    buf.grow(64 * MiB);
    // Capacity doubles: 2, 4, 8, 16, 32, 64 MiB in six chunks.
    expect(buf.capacity).toBe(64 * MiB);
    expect(buf.chunkCount).toBe(6);
    expect(new Set(sizes)).toEqual(new Set([4 * MiB, 8 * MiB, 16 * MiB, 32 * MiB, 64 * MiB]));
    const back = new Uint8Array(100);
    rt.read(0, p, back);
    expect(back).toEqual(first);
    // Bytes across the first chunk boundary, written after a grow, read back after more.
    const span = pattern(G, 2);
    rt.write(0, p + G - 1000, span);
    const spanBack = new Uint8Array(G);
    rt.read(0, p + G - 1000, spanBack);
    // (Buffer.equals: vitest's deep equality takes seconds over 2 MiB.)
    expect(Buffer.from(spanBack).equals(span)).toBe(true);
  });

  it('fixed and function policies decide the chunk sizes', () => {
    const { rt } = h200();
    using fixed = new GrowableBuffer(rt, {
      maxSize: 40 * MiB,
      policy: { kind: 'fixed', chunkSize: 3 * MiB },
    });
    fixed.grow(13 * MiB);
    // 3 MiB rounds up to 4 MiB (2 MiB granularity): four chunks cover 13 MiB.
    expect([fixed.capacity, fixed.chunkCount]).toEqual([16 * MiB, 4]);
    const asked: [number, number][] = [];
    const policy: ChunkPolicy = (capacity, shortfall) => {
      asked.push([capacity, shortfall]);
      return 2 * G;
    };
    using fn = new GrowableBuffer(rt, { maxSize: 10 * MiB, policy });
    fn.grow(5 * MiB);
    fn.grow(10 * MiB);
    expect(asked).toEqual([
      [0, 5 * MiB],
      [4 * MiB, MiB],
      [8 * MiB, 2 * MiB],
    ]);
    // The last chunk is cut at the reservation's end (10 MiB, not 12).
    expect(fn.capacity).toBe(10 * MiB);
    using capped = new GrowableBuffer(rt, {
      maxSize: 64 * MiB,
      policy: { kind: 'geometric', factor: 2, minChunk: 4 * MiB, maxChunk: 16 * MiB },
    });
    for (let s = G; s <= 64 * MiB; s += G) capped.grow(s);
    // 4, 4, 8, 16, 16, 16: doubling from the minimum, then capped.
    expect([capped.capacity, capped.chunkCount]).toEqual([64 * MiB, 6]);
    using once = new GrowableBuffer(rt, {
      maxSize: 64 * MiB,
      policy: { kind: 'geometric', factor: 2, minChunk: 4 * MiB, maxChunk: 16 * MiB },
    });
    // One grow of 64 MiB asks for the whole shortfall, so each chunk is the cap.
    once.grow(64 * MiB);
    expect([once.capacity, once.chunkCount]).toEqual([64 * MiB, 4]);
  });

  it('grants every chunk exactly the access given at creation, per device', () => {
    const { rt } = h200([smallDevice(64, 'a'), smallDevice(64, 'b'), smallDevice(64, 'c')]);
    using buf = new GrowableBuffer(rt, {
      maxSize: 32 * MiB,
      device: 0,
      access: [
        { device: 0, access: Access.ReadWrite },
        { device: 1, access: Access.Read },
      ],
    });
    buf.grow(G);
    buf.grow(8 * MiB);
    const bytes = pattern(16, 3);
    for (const off of [0, G, 6 * MiB]) {
      rt.write(0, buf.pointer + off, bytes);
      const back = new Uint8Array(16);
      rt.read(1, buf.pointer + off, back);
      expect(back).toEqual(bytes);
      expectVmmError(() => rt.write(1, buf.pointer + off, bytes), 'access-denied');
      expectVmmError(() => rt.read(2, buf.pointer + off, back), 'access-denied');
    }
    for (const m of rt.mappingsIn(buf.pointer, buf.capacity)) {
      expect([m.accessOf(0), m.accessOf(1), m.accessOf(2)]).toEqual([
        Access.ReadWrite,
        Access.Read,
        Access.None,
      ]);
    }
  });

  it('shrinks by whole chunks above the new size, and grows again', () => {
    const { machine, rt } = h200();
    using buf = new GrowableBuffer(rt, { maxSize: 64 * MiB, policy: { kind: 'fixed', chunkSize: 4 * MiB } });
    buf.grow(30 * MiB);
    expect(buf.capacity).toBe(32 * MiB);
    const keep = pattern(4096, 4);
    rt.write(0, buf.pointer + 9 * MiB, keep);
    buf.shrink(9 * MiB + 4096);
    // Chunks from 12 MiB up are gone; [8, 12) holds the new end.
    expect([buf.size, buf.capacity, buf.chunkCount]).toEqual([9 * MiB + 4096, 12 * MiB, 3]);
    expect(machine.devices[0].pool.used).toBe(12 * MiB);
    const back = new Uint8Array(4096);
    rt.read(0, buf.pointer + 9 * MiB, back);
    expect(back).toEqual(keep);
    expectVmmError(() => rt.read(0, buf.pointer + 12 * MiB, back), 'not-mapped');
    buf.shrink(8 * MiB);
    expect(buf.capacity).toBe(8 * MiB);
    buf.shrink(0);
    expect([buf.size, buf.capacity, buf.chunkCount]).toEqual([0, 0, 0]);
    expect(machine.devices[0].pool.used).toBe(0);
    buf.grow(5 * MiB);
    expect(buf.capacity).toBe(8 * MiB);
  });

  it('refuses bad arguments with typed errors and changes nothing', () => {
    const { machine, rt } = h200();
    expectVmmError(() => new GrowableBuffer(rt, { maxSize: 0 }), 'invalid-value');
    expectVmmError(() => new GrowableBuffer(rt, { maxSize: -1 }), 'invalid-value');
    expectVmmError(() => new GrowableBuffer(rt, { maxSize: G, device: 3 }), 'invalid-device');
    expectVmmError(
      () => new GrowableBuffer(rt, { maxSize: G, access: [{ device: 0, access: 2 as Access }] }),
      'invalid-value',
    );
    expectVmmError(
      () => new GrowableBuffer(rt, { maxSize: G, policy: { kind: 'fixed', chunkSize: 0 } }),
      'invalid-value',
    );
    expect(() => new GrowableBuffer(rt, { maxSize: G, policy: { kind: 'geometric', factor: 1 } })).toThrow(
      RangeError,
    );
    expect(() => new GrowableBuffer(rt, { maxSize: G, initialSize: 2 * G })).toThrow(RangeError);
    expect(rt.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
    const buf = new GrowableBuffer(rt, { maxSize: 10 * MiB, initialSize: 3 * MiB });
    const before = [buf.size, buf.capacity, buf.chunkCount, machine.devices[0].pool.used];
    expect(() => buf.grow(11 * MiB)).toThrow(RangeError);
    expect(() => buf.grow(MiB)).toThrow(RangeError);
    expect(() => buf.shrink(4 * MiB)).toThrow(RangeError);
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expectVmmError(() => buf.grow(bad), 'invalid-value');
      expectVmmError(() => buf.shrink(bad), 'invalid-value');
    }
    const throwing = new GrowableBuffer(rt, { maxSize: 10 * MiB, policy: () => -5 });
    expectVmmError(() => throwing.grow(1), 'invalid-value');
    throwing.dispose();
    expect([buf.size, buf.capacity, buf.chunkCount, machine.devices[0].pool.used]).toEqual(before);
    buf.dispose();
    buf.dispose();
    expectVmmError(() => buf.grow(1), 'not-initialized');
    expect(rt.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
    expect(machine.devices[0].pool.used).toBe(0);
  });

  it('a grow that fails at any driver step leaves buffer, runtime and machine exactly as they were', () => {
    const setup = () => twoDeviceBuffer(5 * MiB);
    // A dry run counts the primitives of a grow of three chunks.
    const dry = setup();
    dry.faulty.arm(0);
    dry.buf.grow(17 * MiB);
    const steps = dry.faulty.calls;
    expect(dry.faulty.log).toEqual(GROW_BY_THREE_CHUNKS);
    for (let k = 1; k <= steps; k++) {
      const { machine, inner, faulty, rt, buf } = setup();
      const before = state(rt, inner, machine);
      const shape = [buf.size, buf.capacity, buf.chunkCount, buf.pointer];
      faulty.arm(k);
      expect(() => buf.grow(17 * MiB), `step ${k}`).toThrow(VmmError);
      faulty.arm(0);
      expect(state(rt, inner, machine), `step ${k} (${faulty.log})`).toEqual(before);
      expect([buf.size, buf.capacity, buf.chunkCount, buf.pointer]).toEqual(shape);
      const back = new Uint8Array(4096);
      rt.read(1, buf.pointer + 4 * MiB, back);
      expect(back).toEqual(pattern(4096, 9));
      // And it still grows afterwards.
      buf.grow(17 * MiB);
      expect(buf.capacity).toBe(20 * MiB);
      buf.dispose();
      expect(rt.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
      expect(machine.devices.map((d) => d.pool.used)).toEqual([0, 0]);
    }
  });

  it('growing past maxSize is a typed error naming both sizes, like the other refusals', () => {
    const { rt } = h200();
    const buf = new GrowableBuffer(rt, { maxSize: 10 * MiB, initialSize: 3 * MiB });
    let thrown: unknown;
    try {
      buf.grow(11 * MiB);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(GrowPastMaximumError);
    expect(thrown).toBeInstanceOf(AllocatorArgumentError);
    expect(thrown).toMatchObject({
      name: 'GrowPastMaximumError',
      size: 11 * MiB,
      maxSize: 10 * MiB,
      message: `grow to ${11 * MiB} is past maxSize ${10 * MiB}`,
    });
    expect(() => buf.shrink(4 * MiB)).toThrow(AllocatorArgumentError);
    expect(() => new GrowableBuffer(rt, { maxSize: G, policy: { kind: 'geometric', factor: 1 } })).toThrow(
      AllocatorArgumentError,
    );
    expect(buf.size).toBe(3 * MiB);
    buf.dispose();
  });

  it('making a buffer with an initial size fails whole at any driver step', () => {
    const options = { maxSize: 40 * MiB, access: TWO_DEVICES, policy: FIXED_4_MIB, initialSize: 9 * MiB };
    const dry = faultySetup([smallDevice(32, 'a'), smallDevice(32, 'b')]);
    dry.faulty.arm(0);
    new GrowableBuffer(dry.rt, options).dispose();
    // reserve, then three chunks, then access for each device; dispose's steps come after.
    expect(dry.faulty.log.slice(0, 9)).toEqual(['reserve', ...GROW_BY_THREE_CHUNKS]);
    for (const kind of ['out-of-memory', 'invalid-value'] as const) {
      for (let k = 1; k <= 9; k++) {
        const { machine, inner, faulty, rt, reports } = faultySetup([
          smallDevice(32, 'a'),
          smallDevice(32, 'b'),
        ]);
        const before = state(rt, inner, machine);
        faulty.kind = kind;
        faulty.arm(k);
        expect(() => new GrowableBuffer(rt, options), `${kind} at step ${k}`).toThrow(VmmError);
        faulty.arm(0);
        expect(state(rt, inner, machine), `${kind} at step ${k}`).toEqual(before);
        expect(reports).toEqual([]);
        // And the same buffer is made afterwards.
        const buf = new GrowableBuffer(rt, options);
        expect(buf.capacity).toBe(12 * MiB);
        buf.dispose();
        expect(rt.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
      }
    }
  });

  it('a shrink that fails at any driver step changes nothing, bytes included, or stands past the point of no return', () => {
    const setup = () => {
      const s = twoDeviceBuffer(17 * MiB);
      s.rt.write(0, s.buf.pointer + 13 * MiB, pattern(4096, 5));
      return s;
    };
    // A dry run: three chunks above 5 MiB go, each unmapped, then each released (core's unmap of several).
    const dry = setup();
    dry.faulty.arm(0);
    dry.buf.shrink(5 * MiB);
    expect(dry.faulty.log).toEqual(['unmap', 'unmap', 'unmap', 'release', 'release', 'release']);
    expect([dry.buf.size, dry.buf.capacity, dry.buf.chunkCount]).toEqual([5 * MiB, 8 * MiB, 2]);
    let stood = 0;
    for (let k = 1; k <= dry.faulty.log.length; k++) {
      const { machine, inner, faulty, rt, buf, reports } = setup();
      const before = state(rt, inner, machine);
      const shape = [buf.size, buf.capacity, buf.chunkCount];
      faulty.kind = 'invalid-value';
      faulty.arm(k);
      let thrown: unknown;
      try {
        buf.shrink(5 * MiB);
      } catch (e) {
        thrown = e;
      }
      faulty.arm(0);
      const at = `step ${k} (${faulty.log})`;
      if (thrown !== undefined) {
        // Before any memory went: all of it mapped back, with its access and its bytes.
        expect(thrown, at).toBeInstanceOf(VmmError);
        expect(state(rt, inner, machine), at).toEqual(before);
        expect([buf.size, buf.capacity, buf.chunkCount], at).toEqual(shape);
        const back = new Uint8Array(4096);
        rt.read(1, buf.pointer + 13 * MiB, back);
        expect(back, at).toEqual(pattern(4096, 5));
        buf.shrink(5 * MiB);
      } else {
        // Past the first release: the shrink stands, the release that failed is reported.
        stood++;
        expect(reports.length, at).toBeGreaterThan(0);
      }
      expect([buf.size, buf.capacity, buf.chunkCount], at).toEqual([5 * MiB, 8 * MiB, 2]);
      const back = new Uint8Array(4096);
      rt.read(1, buf.pointer + 4 * MiB, back);
      expect(back, at).toEqual(pattern(4096, 9));
      buf.dispose();
      rt.dispose();
      expect(
        machine.devices.map((d) => d.pool.used),
        at,
      ).toEqual([0, 0]);
      expect(machine.liveAllocations, at).toBe(0);
    }
    // Unmaps and the first release throw; the two releases after it are reported.
    expect(stood).toBe(2);
  });

  it('out of memory on a small device: the grow fails whole and nothing leaks', () => {
    const { machine, rt } = h200([smallDevice(8)]);
    const buf = new GrowableBuffer(rt, { maxSize: 32 * MiB, policy: { kind: 'fixed', chunkSize: G } });
    buf.grow(10 * MiB);
    expect(machine.devices[0].pool.used).toBe(10 * MiB);
    // 14 MiB fits in the device's 16; 18 MiB does not, and the two chunks made before the failure are given back.
    expectVmmError(() => buf.grow(18 * MiB), 'out-of-memory');
    expect([buf.size, buf.capacity, buf.chunkCount]).toEqual([10 * MiB, 10 * MiB, 5]);
    expect(machine.devices[0].pool.used).toBe(10 * MiB);
    buf.grow(16 * MiB);
    expect(machine.devices[0].pool.used).toBe(16 * MiB);
    buf.dispose();
    expect(rt.memoryInfo(0).free).toBe(rt.memoryInfo(0).total);
    expect(rt.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
  });

  it('dispose gives everything back and never throws, even when a step fails', () => {
    const s = faultySetup([smallDevice(16)]);
    const buf = new GrowableBuffer(s.rt, { maxSize: 16 * MiB, initialSize: 12 * MiB });
    s.faulty.arm(1);
    expect(() => buf.dispose()).not.toThrow();
    expect(s.reports.length).toBeGreaterThan(0);
    s.faulty.arm(0);
    // The failed step's mapping is still there for the runtime's own teardown.
    s.rt.dispose();
    expect(s.machine.devices[0].pool.used).toBe(0);
    {
      using b = new GrowableBuffer(s.rt.disposed ? new Runtime(s.machine.spawn()) : s.rt, {
        maxSize: 4 * MiB,
        initialSize: 4 * MiB,
      });
      expect(s.machine.devices[0].pool.used).toBe(4 * MiB);
      expect(b.capacity).toBe(4 * MiB);
    }
    expect(s.machine.devices[0].pool.used).toBe(0);
  });
});
