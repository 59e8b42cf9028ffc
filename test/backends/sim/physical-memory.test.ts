import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMachine } from '../../../src/backends/sim/machine.js';
import { PAGE_SIZE, PageAccounting, PhysicalMemory } from '../../../src/backends/sim/physical-memory.js';
import type { AllocationProperties } from '../../../src/core/types.js';

const PROPS: AllocationProperties = { location: { type: 'device', id: 0 }, handleTypes: 0, uncached: false };
const SIZE = 4 * PAGE_SIZE;
/** Nonzero-heavy bytes to write from (a subarray at some start, so writes differ). */
const PATTERN = Uint8Array.from({ length: SIZE + 512 }, (_, i) => (i * 31 + (i >> 8)) & 0xff);

function memory(accounting = new PageAccounting(), size = SIZE, id = 1): PhysicalMemory {
  return new PhysicalMemory(id, size, PROPS, accounting);
}

/** Index of the first differing byte, or -1 (cheap to report, unlike a diff of 256 KiB arrays). */
function firstDiff(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  if (Buffer.from(a.buffer, a.byteOffset, a.length).equals(b)) return -1;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

function readAll(m: PhysicalMemory, offset = 0, length = m.size): Uint8Array {
  const out = new Uint8Array(length).fill(0xee);
  m.read(offset, out, 0, length);
  return out;
}

describe('PhysicalMemory', () => {
  it('reads zeros where nothing was written, and costs nothing', () => {
    const acc = new PageAccounting();
    const m = memory(acc);
    expect(firstDiff(readAll(m), new Uint8Array(SIZE))).toBe(-1);
    expect(m.residentBytes).toBe(0);
    expect(acc.pages).toBe(0);
    // A fill with zeros of an unwritten range makes no page either.
    m.fill(100, 0, 1000);
    m.fill(0, 0, SIZE);
    expect(acc.pages).toBe(0);
  });

  it('writes and reads across page boundaries at odd offsets', () => {
    const acc = new PageAccounting();
    const m = memory(acc);
    const data = Uint8Array.from({ length: PAGE_SIZE + 999 }, (_, i) => (i * 7 + 3) & 0xff);
    const at = PAGE_SIZE - 333;
    m.write(at, data, 0, data.length);
    // Two pages touched: [PAGE_SIZE - 333, 2 * PAGE_SIZE + 666).
    expect(acc.pages).toBe(3);
    expect(m.residentBytes).toBe(3 * PAGE_SIZE);
    const back = new Uint8Array(data.length);
    m.read(at, back, 0, data.length);
    expect(firstDiff(back, data)).toBe(-1);
    const all = readAll(m);
    expect(firstDiff(all.subarray(0, at), new Uint8Array(at))).toBe(-1);
    expect(firstDiff(all.subarray(at + data.length), new Uint8Array(SIZE - at - data.length))).toBe(-1);
    // A write from the middle of a source buffer into the middle of a read buffer.
    m.write(3 * PAGE_SIZE + 5, data, 10, 20);
    const part = new Uint8Array(30).fill(9);
    m.read(3 * PAGE_SIZE + 5, part, 5, 20);
    expect(part.subarray(5, 25)).toEqual(data.subarray(10, 30));
    expect(part.subarray(0, 5)).toEqual(new Uint8Array(5).fill(9));
    expect(part.subarray(25)).toEqual(new Uint8Array(5).fill(9));
  });

  it('a fill with 0 of whole pages drops them; a partial one keeps them', () => {
    const machine = createMachine({ devices: ['H200'] });
    const p = machine.spawn();
    const h = p.create(2 * 1024 * 1024, PROPS);
    const va = p.reserve(2 * 1024 * 1024, 2 * 1024 * 1024, 0);
    p.map(va, 2 * 1024 * 1024, h, 0);
    p.setAccess(va, 2 * 1024 * 1024, 0, 3);
    p.write(0, va, new Uint8Array(4 * PAGE_SIZE).fill(1), 0);
    expect(machine.residentBytes).toBe(4 * PAGE_SIZE);
    p.fill(0, va + 10, 0, PAGE_SIZE, 0); // partial pages 0 and 1: kept
    expect(machine.residentBytes).toBe(4 * PAGE_SIZE);
    p.fill(0, va + PAGE_SIZE, 0, 2 * PAGE_SIZE, 0); // whole pages 1 and 2
    expect(machine.residentBytes).toBe(2 * PAGE_SIZE);
    const out = new Uint8Array(4 * PAGE_SIZE);
    p.read(0, va, out, 0);
    const expected = new Uint8Array(4 * PAGE_SIZE);
    expected.fill(1, 0, 10);
    expected.fill(1, 3 * PAGE_SIZE);
    expect(firstDiff(out, expected)).toBe(-1);
    p.fill(0, va, 0, 2 * 1024 * 1024, 0);
    expect(machine.residentBytes).toBe(0);
    p.dispose();
    expect(machine.residentBytes).toBe(0);
    expect(machine.liveAllocations).toBe(0);
  });

  it('discard drops every page from the accounting', () => {
    const acc = new PageAccounting();
    const a = memory(acc);
    const b = memory(acc, SIZE, 2);
    a.fill(0, 5, SIZE);
    b.fill(PAGE_SIZE, 5, 10);
    expect(acc.pages).toBe(5);
    expect(acc.bytes).toBe(5 * PAGE_SIZE);
    a.discard();
    expect(acc.pages).toBe(1);
    expect(a.residentBytes).toBe(0);
    a.discard();
    expect(acc.pages).toBe(1);
  });

  type Op =
    | { op: 'write'; m: number; at: number; len: number; seed: number }
    | { op: 'fill'; m: number; at: number; len: number; value: number }
    | { op: 'copy'; dst: number; src: number; to: number; from: number; len: number };

  it('write/fill/copyFrom (memmove within one memory) agree with a Uint8Array model', () => {
    const offset = fc.oneof(
      fc.integer({ min: 0, max: SIZE - 1 }),
      fc.integer({ min: 0, max: 3 }).map((p) => p * PAGE_SIZE),
      fc.integer({ min: 1, max: 3 }).map((p) => p * PAGE_SIZE - 7),
    );
    const len = fc.oneof(
      fc.integer({ min: 0, max: 300 }),
      fc.constantFrom(PAGE_SIZE, 2 * PAGE_SIZE, PAGE_SIZE + 1, PAGE_SIZE - 1),
      fc.integer({ min: 0, max: SIZE }),
    );
    const which = fc.integer({ min: 0, max: 1 });
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ op: fc.constant('write' as const), m: which, at: offset, len, seed: fc.nat(255) }),
      fc.record({
        op: fc.constant('fill' as const),
        m: which,
        at: offset,
        len,
        value: fc.constantFrom(0, 0, 1, 255),
      }),
      fc.record({
        op: fc.constant('copy' as const),
        dst: which,
        src: which,
        to: offset,
        from: offset,
        len,
      }),
      fc.record({
        op: fc.constant('copy' as const),
        dst: fc.constant(0),
        src: fc.constant(0),
        to: offset,
        from: offset.map((o) => o),
        len,
      }),
    );
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 25 }), (ops) => {
        const acc = new PageAccounting();
        const mems = [memory(acc, SIZE, 1), memory(acc, SIZE, 2)];
        const models = [new Uint8Array(SIZE), new Uint8Array(SIZE)];
        for (const op of ops) {
          if (op.op === 'write') {
            const n = Math.min(op.len, SIZE - op.at);
            const src = PATTERN.subarray(op.seed, op.seed + n + 3);
            mems[op.m].write(op.at, src, 3, n);
            models[op.m].set(src.subarray(3, 3 + n), op.at);
          } else if (op.op === 'fill') {
            const n = Math.min(op.len, SIZE - op.at);
            mems[op.m].fill(op.at, op.value, n);
            models[op.m].fill(op.value, op.at, op.at + n);
          } else {
            const n = Math.min(op.len, SIZE - op.to, SIZE - op.from);
            mems[op.dst].copyFrom(mems[op.src], op.from, op.to, n);
            // Uint8Array.copyWithin / set of a copy: memmove semantics.
            models[op.dst].set(models[op.src].slice(op.from, op.from + n), op.to);
          }
          for (let i = 0; i < 2; i++) expect(firstDiff(readAll(mems[i]), models[i])).toBe(-1);
          // Accounting equals the pages both memories hold, and never exceeds the touched pages.
          expect(acc.pages * PAGE_SIZE).toBe(mems[0].residentBytes + mems[1].residentBytes);
        }
        // Reads at odd offsets and lengths agree too.
        for (const [at, n] of [
          [1, 5],
          [PAGE_SIZE - 3, 9],
          [2 * PAGE_SIZE + 17, PAGE_SIZE + 100],
        ]) {
          const out = new Uint8Array(n);
          mems[0].read(at, out, 0, n);
          expect(firstDiff(out, models[0].subarray(at, at + n))).toBe(-1);
        }
      }),
      { numRuns: 300, seed: 6 },
    );
  });
});
