import fc from 'fast-check';
import { expect, it } from 'vitest';
import type { Machine } from '../../../src/backends/sim/machine.js';
import { createHip } from '../../../src/entry/processes.js';
import * as C from '../../../src/flavors/hip/constants.js';
import type { HipFlavor } from '../../../src/flavors/hip/hip.js';

/**
 * Random sequences of valid and invalid HIP calls against a small shadow
 * model: one reservation of SLOTS slots of 4 KiB (the MI300X minimum
 * granularity), allocations of one or two slots, two devices. The model
 * predicts every hipError_t and every byte read.
 */
const SLOT = 4096;
const SLOTS = 6;
const DEVICES = 2;

interface Memory {
  size: number;
  bytes: Uint8Array;
  handleRefs: number;
  mapRefs: number;
}

interface Chunk {
  slot: number;
  slots: number;
  memory: Memory;
  access: number[];
}

type Op =
  | { op: 'create'; slots: number; bad: boolean }
  | { op: 'release'; pick: number; bogus: boolean }
  | { op: 'map'; slot: number; slots: number; pick: number }
  | { op: 'unmap'; slot: number; inSlot: number; slots: number }
  | { op: 'setAccess'; slot: number; slots: number; device: number; flags: number }
  | { op: 'grant'; slot: number; device: number; flags: number }
  | { op: 'setup'; slot: number; slots: number }
  | { op: 'retain'; slot: number; inSlot: number }
  | { op: 'write'; device: number; at: number; length: number; value: number }
  | { op: 'read'; device: number; at: number; length: number };

const slot = fc.integer({ min: 0, max: SLOTS - 1 });
const span = fc.integer({ min: 1, max: 3 });
const device = fc.constantFrom(0, 0, 0, 1);
const at = fc.tuple(slot, fc.constantFrom(0, 0, 17, SLOT - 8)).map(([s, off]) => s * SLOT + off);
const length = fc.constantFrom(1, 16, SLOT, SLOT + 100, 2 * SLOT);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('create' as const),
      slots: fc.integer({ min: 1, max: 2 }),
      bad: fc.constantFrom(false, false, false, true),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('release' as const), pick: fc.nat(), bogus: fc.boolean() }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('map' as const),
      slot,
      slots: fc.integer({ min: 1, max: 2 }),
      pick: fc.nat(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('unmap' as const),
      slot,
      inSlot: fc.constantFrom(0, 0, 100),
      slots: span,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('setAccess' as const),
      slot,
      slots: span,
      device,
      flags: fc.constantFrom(0, 1, 3, 3, 3, 2),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({ op: fc.constant('setup' as const), slot, slots: fc.integer({ min: 1, max: 2 }) }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('grant' as const),
      slot,
      device,
      flags: fc.constantFrom(1, 3, 3, 3),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('retain' as const), slot, inSlot: fc.constantFrom(0, 1234) }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('write' as const),
      device,
      at,
      length,
      value: fc.integer({ min: 0, max: 255 }),
    }),
  },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('read' as const), device, at, length }) },
);

class Model {
  /** Live handle values -> memory. */
  readonly handles = new Map<bigint, Memory>();
  readonly chunks: (Chunk | undefined)[] = new Array(SLOTS).fill(undefined);
  readonly memories = new Set<Memory>();

  chunkAt(s: number): Chunk | undefined {
    return this.chunks[s];
  }

  /** ValidateSubBufferCoverage from the chunk containing slot s, measured from its start. */
  coverage(s: number, slots: number): Chunk[] | undefined {
    const first = this.chunkAt(s);
    if (first === undefined) return undefined;
    if (first.slot + slots > SLOTS) return undefined;
    const out: Chunk[] = [];
    let covered = 0;
    let c: Chunk | undefined = first;
    while (c !== undefined && c.slot + c.slots <= first.slot + slots) {
      out.push(c);
      covered += c.slots;
      c = this.chunkAt(c.slot + c.slots);
      if (c !== undefined && c.slot !== out[out.length - 1].slot + out[out.length - 1].slots) c = undefined;
    }
    return covered === slots ? out : undefined;
  }

  unmapChunk(c: Chunk): void {
    for (let i = c.slot; i < c.slot + c.slots; i++) this.chunks[i] = undefined;
    c.memory.mapRefs--;
    this.drop(c.memory);
  }

  drop(m: Memory): void {
    if (m.handleRefs + m.mapRefs === 0) this.memories.delete(m);
  }

  /** Expected code and the pieces of [addr, addr + n) for a copy needing `need` on `dev`. */
  walk(dev: number, addr: number, n: number, need: number): number | { c: Chunk; off: number; k: number }[] {
    const pieces: { c: Chunk; off: number; k: number }[] = [];
    let pos = addr;
    const end = addr + n;
    if (end > SLOTS * SLOT) {
      // past the reservation: nothing is mapped there
    }
    while (pos < end) {
      const s = Math.floor(pos / SLOT);
      const c = s < SLOTS ? this.chunkAt(s) : undefined;
      if (c === undefined) return C.hipErrorInvalidValue;
      if ((c.access[dev] & need) !== need) return C.hipErrorIllegalAddress;
      const cEnd = (c.slot + c.slots) * SLOT;
      const k = Math.min(cEnd, end) - pos;
      pieces.push({ c, off: pos - c.slot * SLOT, k });
      pos += k;
    }
    return pieces;
  }
}

function run(hip: HipFlavor, model: Model, base: bigint, op: Op): void {
  const handleList = [...model.handles.keys()];
  switch (op.op) {
    case 'create': {
      const size = op.bad ? 1000 : op.slots * SLOT;
      const h = { value: 0n };
      const code = hip.hipMemCreate(
        h,
        size,
        { type: 1, requestedHandleTypes: 0, location: { type: 1, id: op.slots - 1 } },
        0,
      );
      expect(code).toBe(op.bad ? C.hipErrorInvalidValue : C.hipSuccess);
      if (code === C.hipSuccess) {
        const m: Memory = { size, bytes: new Uint8Array(size), handleRefs: 1, mapRefs: 0 };
        model.handles.set(h.value, m);
        model.memories.add(m);
      }
      return;
    }
    case 'release': {
      if (op.bogus || handleList.length === 0) {
        expect(hip.hipMemRelease(0xbad0n + BigInt(op.pick % 7))).toBe(C.hipErrorInvalidValue);
        return;
      }
      const h = handleList[op.pick % handleList.length];
      const m = model.handles.get(h)!;
      expect(hip.hipMemRelease(h)).toBe(C.hipSuccess);
      m.handleRefs--;
      if (m.handleRefs === 0) model.handles.delete(h);
      model.drop(m);
      return;
    }
    case 'map': {
      const h = handleList.length === 0 ? 0xbad0n : handleList[op.pick % handleList.length];
      const m = model.handles.get(h);
      const free = Array.from({ length: op.slots }, (_, i) => op.slot + i).every(
        (s) => s < SLOTS && model.chunkAt(s) === undefined,
      );
      const fits = m !== undefined && op.slots * SLOT <= m.size;
      const code = hip.hipMemMap(base + BigInt(op.slot * SLOT), op.slots * SLOT, 0, h, 0);
      expect(code).toBe(m !== undefined && free && fits ? C.hipSuccess : C.hipErrorInvalidValue);
      if (code === C.hipSuccess && m !== undefined) {
        const c: Chunk = { slot: op.slot, slots: op.slots, memory: m, access: new Array(DEVICES).fill(0) };
        for (let i = 0; i < op.slots; i++) model.chunks[op.slot + i] = c;
        m.mapRefs++;
      }
      return;
    }
    case 'unmap': {
      const chunks = model.coverage(op.slot, op.slots);
      const code = hip.hipMemUnmap(base + BigInt(op.slot * SLOT + op.inSlot), op.slots * SLOT);
      expect(code).toBe(chunks ? C.hipSuccess : C.hipErrorInvalidValue);
      for (const c of chunks ?? []) model.unmapChunk(c);
      return;
    }
    case 'setAccess': {
      const chunks = model.coverage(op.slot, op.slots);
      const desc = [{ location: { type: 1, id: op.device }, flags: op.flags }];
      const code = hip.hipMemSetAccess(base + BigInt(op.slot * SLOT), op.slots * SLOT, desc, 1);
      expect(code).toBe(chunks && op.flags !== 2 ? C.hipSuccess : C.hipErrorInvalidValue);
      if (code === C.hipSuccess) for (const c of chunks!) c.access[op.device] = op.flags;
      return;
    }
    case 'setup': {
      // The valid path: create, map at `slot`, grant device 0 read-write.
      run(hip, model, base, { op: 'create', slots: op.slots, bad: false });
      const handles = [...model.handles.keys()];
      run(hip, model, base, { op: 'map', slot: op.slot, slots: op.slots, pick: handles.length - 1 });
      run(hip, model, base, { op: 'grant', slot: op.slot, device: 0, flags: 3 });
      return;
    }
    case 'grant': {
      // A valid setAccess over exactly the chunk at `slot` (when there is one).
      const c = model.chunkAt(op.slot);
      const start = c?.slot ?? op.slot;
      const slots = c?.slots ?? 1;
      run(hip, model, base, { op: 'setAccess', slot: start, slots, device: op.device, flags: op.flags });
      return;
    }
    case 'retain': {
      const c = model.chunkAt(op.slot);
      const h = { value: 0n };
      const code = hip.hipMemRetainAllocationHandle(h, base + BigInt(op.slot * SLOT + op.inSlot));
      expect(code).toBe(c ? C.hipSuccess : C.hipErrorInvalidValue);
      if (c) {
        c.memory.handleRefs++;
        const known = model.handles.get(h.value);
        expect(known === undefined || known === c.memory).toBe(true);
        model.handles.set(h.value, c.memory);
      }
      return;
    }
    case 'write': {
      const expected = model.walk(op.device, op.at, op.length, 2);
      const data = new Uint8Array(op.length).fill(op.value);
      ok(hip.hipSetDevice(op.device));
      const code = hip.hipMemcpy(base + BigInt(op.at), data, op.length, C.hipMemcpyHostToDevice);
      expect(code).toBe(typeof expected === 'number' ? expected : C.hipSuccess);
      if (typeof expected !== 'number') {
        for (const p of expected) p.c.memory.bytes.fill(op.value, p.off, p.off + p.k);
      }
      return;
    }
    case 'read': {
      const expected = model.walk(op.device, op.at, op.length, 1);
      const out = new Uint8Array(op.length);
      ok(hip.hipSetDevice(op.device));
      const code = hip.hipMemcpy(out, base + BigInt(op.at), op.length, C.hipMemcpyDeviceToHost);
      expect(code).toBe(typeof expected === 'number' ? expected : C.hipSuccess);
      if (typeof expected !== 'number') {
        let i = 0;
        for (const p of expected) {
          expect(out.subarray(i, i + p.k)).toEqual(p.c.memory.bytes.subarray(p.off, p.off + p.k));
          i += p.k;
        }
      }
      return;
    }
  }
}

function ok(code: number): void {
  expect(code).toBe(C.hipSuccess);
}

function checkInvariants(hip: HipFlavor, model: Model): void {
  let end = 0;
  for (const m of hip.runtime.mappings()) {
    expect(m.va).toBeGreaterThanOrEqual(end);
    end = m.end;
  }
  expect((hip.machine as Machine).liveAllocations).toBe(model.memories.size);
}

it('random HIP call sequences agree with the shadow model and leak nothing', () => {
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 20, maxLength: 60 }), (ops) => {
      const hip = createHip({ devices: ['MI300X', 'MI300X'] });
      try {
        const p = { value: 0n };
        ok(hip.hipMemAddressReserve(p, SLOTS * SLOT, 0, null, 0));
        const model = new Model();
        for (const op of ops) {
          run(hip, model, p.value, op);
          checkInvariants(hip, model);
        }
        // Teardown through HIP: free while mapped is 999, then unmap, release, free.
        const mapped = model.chunks.some((c) => c !== undefined);
        expect(hip.hipMemAddressFree(p.value, SLOTS * SLOT)).toBe(mapped ? C.hipErrorUnknown : C.hipSuccess);
        if (mapped) {
          for (const c of new Set(model.chunks)) {
            if (c === undefined) continue;
            ok(hip.hipMemUnmap(base(p.value, c.slot), c.slots * SLOT));
            model.unmapChunk(c);
          }
          ok(hip.hipMemAddressFree(p.value, SLOTS * SLOT));
        }
        for (const [h, m] of model.handles) {
          while (m.handleRefs > 0) {
            ok(hip.hipMemRelease(h));
            m.handleRefs--;
          }
          model.drop(m);
        }
        expect(hip.runtime.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
        expect((hip.machine as Machine).liveAllocations).toBe(0);
      } finally {
        hip.dispose();
      }
    }),
    { numRuns: 60, seed: 20240601 },
  );
});

function base(b: bigint, s: number): bigint {
  return b + BigInt(s * SLOT);
}
