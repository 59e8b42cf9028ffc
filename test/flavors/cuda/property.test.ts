import fc from 'fast-check';
import { expect, it } from 'vitest';
import { createMachine, type Machine } from '../../../src/backends/sim/machine.js';
import type { SimProcess } from '../../../src/backends/sim/process.js';
import { createCuda } from '../../../src/entry/processes.js';
import * as C from '../../../src/flavors/cuda/constants.js';
import type { CudaFlavor } from '../../../src/flavors/cuda/cuda.js';

/**
 * Random sequences of valid and invalid CUDA VMM calls in two processes on
 * one machine of two H200s, against a shadow model of state and bytes. Each
 * process has one reservation of SLOTS slots of 2 MiB; allocations are one or
 * two slots, mapped at aligned slots wholly inside the reservation (so never
 * as a span past its end). The model predicts every CUresult (the H200's
 * rules, as conformance/results/h200-driver.md records them) and every byte.
 */
const G = 2 * 1024 * 1024;
const SLOTS = 8;
const DEVICES = 2;
const READ = 1;
const WRITE = 2;

interface Memory {
  readonly id: number;
  readonly size: number;
  readonly bytes: Uint8Array;
}

interface Handle {
  readonly value: bigint;
  readonly memory: Memory;
  readonly exportable: boolean;
  readonly imported: boolean;
  refs: number;
  mapRefs: number;
}

interface MappingModel {
  slot: number;
  slots: number;
  handle: Handle;
  access: number[];
}

class ProcessModel {
  readonly handles = new Map<bigint, Handle>();
  /** Handle values seen at some time (for invalid picks). */
  readonly seen = new Set<bigint>();
  readonly slots: (MappingModel | undefined)[] = new Array(SLOTS).fill(undefined);
  readonly fds = new Map<number, Memory>();

  constructor(
    readonly cuda: CudaFlavor,
    public base: bigint,
    readonly contexts: bigint[],
  ) {}

  mappings(): MappingModel[] {
    return [...new Set(this.slots.filter((m): m is MappingModel => m !== undefined))].sort(
      (a, b) => a.slot - b.slot,
    );
  }

  at(va: number): MappingModel | undefined {
    if (va < 0 || va >= SLOTS * G) return undefined;
    return this.slots[Math.floor(va / G)];
  }

  unmap(m: MappingModel): void {
    for (let i = m.slot; i < m.slot + m.slots; i++) this.slots[i] = undefined;
    m.handle.mapRefs--;
    this.forget(m.handle);
  }

  forget(h: Handle): void {
    if (h.refs + h.mapRefs === 0) this.handles.delete(h.value);
  }

  /** The pieces of [va, va + n) and whether device `dev` may touch them with `need`; a code if not. */
  walk(
    dev: number,
    va: number,
    n: number,
    need: number,
  ): { m: MappingModel; off: number; k: number }[] | number {
    const out: { m: MappingModel; off: number; k: number }[] = [];
    for (let pos = va; pos < va + n; ) {
      const m = this.at(pos);
      if (m === undefined || (m.access[dev] & need) !== need) return C.CUDA_ERROR_INVALID_VALUE;
      const end = (m.slot + m.slots) * G;
      const k = Math.min(end, va + n) - pos;
      out.push({ m, off: pos - m.slot * G, k });
      pos += k;
    }
    return out;
  }
}

type Op =
  | { op: 'create'; p: number; slots: number; device: number; exportable: boolean; bad: 0 | 1 | 2 | 3 }
  | { op: 'release'; p: number; pick: number; kind: 'live' | 'seen' | 'bogus' }
  | { op: 'map'; p: number; slot: number; pick: number; wrongSize: boolean; misaligned: boolean }
  | { op: 'unmap'; p: number; slot: number; slots: number; shift: number }
  | {
      op: 'setAccess';
      p: number;
      slot: number;
      slots: number;
      device: number;
      flags: number;
      misaligned: boolean;
    }
  | { op: 'grant'; p: number; slot: number; device: number; flags: number }
  | { op: 'setup'; p: number; slot: number; slots: number; exportable: boolean }
  | { op: 'retain'; p: number; slot: number; inner: number }
  | { op: 'write'; p: number; device: number; at: number; aim: number | null; length: number; seed: number }
  | { op: 'memset'; p: number; device: number; at: number; aim: number | null; length: number; value: number }
  | { op: 'read'; p: number; device: number; at: number; aim: number | null; length: number }
  | { op: 'copy'; p: number; device: number; dst: number; src: number; aim: number | null; length: number }
  | { op: 'share'; p: number; slot: number; slots: number; pick: number }
  | { op: 'export'; p: number; pick: number; pass: boolean }
  | { op: 'import'; p: number; pick: number; bogus: boolean }
  | { op: 'reserveFree'; p: number; slots: number; wrongSize: boolean }
  | { op: 'freeMain'; p: number };

const proc = fc.constantFrom(0, 0, 0, 1);
const slot = fc.integer({ min: 0, max: SLOTS - 1 });
const device = fc.constantFrom(0, 0, 0, 1);
const at = fc.tuple(slot, fc.constantFrom(0, 0, 17, 4096, G - 8, G - 4096)).map(([s, off]) => s * G + off);
/** Aim an access at a mapped slot (by index among the mappings) half the time. */
const aim = fc.option(fc.nat(), { freq: 2 });
const length = fc.constantFrom(1, 16, 4099, 65536 + 5, G, G + 3);
const op = <T extends string>(name: T) => fc.constant(name);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      op: op('create'),
      p: proc,
      slots: fc.integer({ min: 1, max: 2 }),
      device,
      exportable: fc.boolean(),
      bad: fc.constantFrom(0, 0, 0, 0, 0, 1, 2, 3) as fc.Arbitrary<0 | 1 | 2 | 3>,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: op('release'),
      p: proc,
      pick: fc.nat(),
      kind: fc.constantFrom('live' as const, 'live' as const, 'seen' as const, 'bogus' as const),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: op('map'),
      p: proc,
      slot,
      pick: fc.nat(),
      wrongSize: fc.constantFrom(false, false, false, false, true),
      misaligned: fc.constantFrom(false, false, false, false, true),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: op('unmap'),
      p: proc,
      slot,
      slots: fc.integer({ min: 0, max: 3 }),
      shift: fc.constantFrom(0, 0, 0, 4096),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: op('setAccess'),
      p: proc,
      slot,
      slots: fc.integer({ min: 1, max: 4 }),
      device: fc.constantFrom(0, 1, 2),
      flags: fc.constantFrom(0, 1, 3, 3, 2),
      misaligned: fc.constantFrom(false, false, false, true),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({ op: op('grant'), p: proc, slot, device, flags: fc.constantFrom(1, 3, 3, 3) }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      op: op('setup'),
      p: proc,
      slot,
      slots: fc.integer({ min: 1, max: 2 }),
      exportable: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: op('retain'), p: proc, slot, inner: fc.constantFrom(0, 0, 4096, G - 1) }),
  },
  {
    weight: 5,
    arbitrary: fc.record({ op: op('write'), p: proc, device, at, aim, length, seed: fc.nat(4095) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: op('memset'),
      p: proc,
      device,
      at,
      aim,
      length,
      value: fc.integer({ min: 0, max: 255 }),
    }),
  },
  { weight: 6, arbitrary: fc.record({ op: op('read'), p: proc, device, at, aim, length }) },
  { weight: 3, arbitrary: fc.record({ op: op('copy'), p: proc, device, dst: at, src: at, aim, length }) },
  { weight: 2, arbitrary: fc.record({ op: op('export'), p: proc, pick: fc.nat(), pass: fc.boolean() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: op('import'),
      p: proc,
      pick: fc.nat(),
      bogus: fc.constantFrom(false, false, true),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: op('reserveFree'),
      p: proc,
      slots: fc.integer({ min: 1, max: 4 }),
      wrongSize: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: op('freeMain'), p: proc }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: op('share'),
      p: proc,
      slot,
      slots: fc.integer({ min: 1, max: 2 }),
      pick: fc.nat(),
    }),
  },
);

/** What a refused read must leave in the host buffer. */
const UNTOUCHED = new Uint8Array(G + 8192).fill(0xcd);

/** Bytes to write from: a subarray at `seed`. */
const PATTERN = Uint8Array.from({ length: G + 8192 }, (_, i) => (i * 131 + (i >> 9) + 1) & 0xff);

interface Counters {
  writes: number;
  reads: number;
  copies: number;
  crossProcessReads: number;
  refusedAccess: number;
  releaseRefused: number;
  mapOverlap: number;
  emptyUnmap: number;
}

class World {
  readonly machine: Machine;
  readonly procs: ProcessModel[];
  readonly memories = new Set<Memory>();
  nextMemory = 1;

  constructor(readonly counters: Counters) {
    this.machine = createMachine({ devices: ['H200', 'H200'] });
    this.procs = [0, 1].map(() => {
      const cuda = createCuda({ machine: this.machine, report: () => {} });
      ok(cuda.cuInit(0));
      const contexts = [0, 1].map((d) => {
        const c = { value: 0n };
        ok(cuda.cuDevicePrimaryCtxRetain(c, d));
        return c.value;
      });
      ok(cuda.cuCtxSetCurrent(contexts[0]));
      const p = { value: 0n };
      ok(cuda.cuMemAddressReserve(p, SLOTS * G, 0, 0, 0));
      return new ProcessModel(cuda, p.value, contexts);
    });
  }

  /** Memories some handle, mapping or descriptor holds. */
  liveMemories(): Set<Memory> {
    const out = new Set<Memory>();
    for (const p of this.procs) {
      for (const h of p.handles.values()) out.add(h.memory);
      for (const m of p.fds.values()) out.add(m);
    }
    return out;
  }

  use(p: ProcessModel, dev: number): void {
    ok(p.cuda.cuCtxSetCurrent(p.contexts[dev]));
  }

  run(o: Op): void {
    const p = this.procs[o.p];
    if ((o.op === 'write' || o.op === 'memset' || o.op === 'read' || o.op === 'copy') && o.aim !== null) {
      const ms = p.mappings();
      if (ms.length > 0) {
        const m = ms[o.aim % ms.length];
        if (o.op === 'copy') {
          const other = ms[(o.aim >> 3) % ms.length];
          this.run({
            ...o,
            aim: null,
            dst: m.slot * G + (o.dst % G),
            src: other.slot * G + (o.src % G),
          });
        } else this.run({ ...o, aim: null, at: m.slot * G + (o.at % G) });
        return;
      }
    }
    const cuda = p.cuda;
    const va = (off: number) => p.base + BigInt(off);
    switch (o.op) {
      case 'create': {
        const h = { value: 0n };
        const size = o.bad === 1 ? o.slots * G + 4096 : o.slots * G;
        const prop = {
          type: C.CU_MEM_ALLOCATION_TYPE_PINNED,
          requestedHandleTypes: o.exportable ? C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : 0,
          location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: o.bad === 2 ? 7 : o.device },
        };
        const code = cuda.cuMemCreate(h, size, prop, o.bad === 3 ? 1 : 0);
        expect(code).toBe([0, 1, 101, 1][o.bad]);
        if (code !== 0) return;
        expect(p.handles.has(h.value)).toBe(false);
        const memory: Memory = { id: this.nextMemory++, size, bytes: new Uint8Array(size) };
        p.handles.set(h.value, {
          value: h.value,
          memory,
          exportable: o.exportable,
          imported: false,
          refs: 1,
          mapRefs: 0,
        });
        p.seen.add(h.value);
        return;
      }
      case 'release': {
        const value = pickHandle(p, o.pick, o.kind);
        const handle = p.handles.get(value);
        const valid = handle !== undefined && handle.refs > 0;
        expect(cuda.cuMemRelease(value)).toBe(valid ? 0 : 1);
        if (!valid) this.counters.releaseRefused++;
        if (valid) {
          handle.refs--;
          p.forget(handle);
        }
        return;
      }
      case 'map': {
        const value = pickHandle(p, o.pick, 'live');
        const handle = p.handles.get(value);
        const slots = handle === undefined ? 1 : handle.memory.size / G;
        const start = Math.min(o.slot, SLOTS - slots);
        const size = handle === undefined ? G : o.wrongSize ? handle.memory.size + G : handle.memory.size;
        const code = cuda.cuMemMap(va(start * G + (o.misaligned ? 4096 : 0)), size, 0, value, 0);
        const valid = handle !== undefined && handle.refs > 0;
        let expected: number;
        if (!valid) expected = 1;
        else if (o.wrongSize) expected = C.CUDA_ERROR_NOT_SUPPORTED;
        else if (o.misaligned) expected = 1;
        else {
          const free = p.slots.slice(start, start + slots).every((m) => m === undefined);
          expected = free ? 0 : 1;
          if (!free) this.counters.mapOverlap++;
        }
        expect(code).toBe(expected);
        if (code === 0 && handle) {
          const m: MappingModel = { slot: start, slots, handle, access: new Array(DEVICES).fill(0) };
          for (let i = start; i < start + slots; i++) p.slots[i] = m;
          handle.mapRefs++;
        }
        return;
      }
      case 'unmap': {
        const from = o.slot * G + o.shift;
        const n = o.slots * G;
        const end = from + n;
        const found = p
          .mappings()
          .filter((m) => m.slot * G < from + Math.max(n, 1) && (m.slot + m.slots) * G > from);
        const splits = found.some((m) => m.slot * G < from || (m.slot + m.slots) * G > end);
        expect(cuda.cuMemUnmap(va(from), n)).toBe(splits ? 1 : 0);
        if (found.length === 0) this.counters.emptyUnmap++;
        if (!splits) for (const m of found) p.unmap(m);
        return;
      }
      case 'setAccess': {
        const from = o.slot * G + (o.misaligned ? 4096 : 0);
        const n = o.slots * G;
        const desc = [{ location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: o.device }, flags: o.flags }];
        const code = cuda.cuMemSetAccess(va(from), n, desc, 1);
        const first = p.at(from);
        const last = p.at(from + n - 1);
        const rangeOk =
          first !== undefined &&
          first.slot * G === from &&
          last !== undefined &&
          (last.slot + last.slots) * G === from + n;
        const argsOk = o.device < DEVICES && o.flags !== 2;
        expect(code).toBe(rangeOk && argsOk ? 0 : 1);
        if (code === 0) {
          // Only the mappings before the first hole get access (setAccess.rangeWithHole).
          for (let m: MappingModel | undefined = first; m !== undefined && m.slot * G < from + n; ) {
            m.access[o.device] = o.flags;
            const next: number = m.slot + m.slots;
            m = next < SLOTS ? p.slots[next] : undefined;
          }
        }
        return;
      }
      case 'grant': {
        const m = p.slots[o.slot];
        const s = m?.slot ?? o.slot;
        const slots = m?.slots ?? 1;
        this.run({
          op: 'setAccess',
          p: o.p,
          slot: s,
          slots,
          device: o.device,
          flags: o.flags,
          misaligned: false,
        });
        return;
      }
      case 'setup': {
        this.run({ op: 'create', p: o.p, slots: o.slots, device: 0, exportable: o.exportable, bad: 0 });
        const newest = [...p.handles.values()].at(-1)!;
        const start = Math.min(o.slot, SLOTS - o.slots);
        const freeAt = p.slots.findIndex(
          (_, i) =>
            i >= start && p.slots.slice(i, i + o.slots).every((x) => x === undefined) && i + o.slots <= SLOTS,
        );
        const target = freeAt >= 0 ? freeAt : start;
        const pick = [...p.handles.values()].filter((h) => h.refs > 0).indexOf(newest);
        this.run({ op: 'map', p: o.p, slot: target, pick, wrongSize: false, misaligned: false });
        this.run({ op: 'grant', p: o.p, slot: target, device: 0, flags: 3 });
        return;
      }
      case 'retain': {
        const h = { value: 0n };
        const m = p.slots[o.slot];
        const code = cuda.cuMemRetainAllocationHandle(h, va(o.slot * G + o.inner));
        expect(code).toBe(m ? 0 : 1);
        if (m) {
          expect(h.value).toBe(m.handle.value);
          m.handle.refs++;
        }
        return;
      }
      case 'write':
      case 'memset': {
        this.use(p, o.device);
        const n = o.length;
        const expected = p.walk(o.device, o.at, n, WRITE);
        const code =
          o.op === 'write'
            ? cuda.cuMemcpyHtoD(va(o.at), PATTERN.subarray(o.seed, o.seed + n), n)
            : cuda.cuMemsetD8(va(o.at), o.value, n);
        expect(code).toBe(typeof expected === 'number' ? expected : 0);
        if (typeof expected === 'number') {
          this.counters.refusedAccess++;
          return;
        }
        this.counters.writes++;
        let i = 0;
        for (const piece of expected) {
          const bytes = piece.m.handle.memory.bytes;
          if (o.op === 'write') bytes.set(PATTERN.subarray(o.seed + i, o.seed + i + piece.k), piece.off);
          else bytes.fill(o.value, piece.off, piece.off + piece.k);
          i += piece.k;
        }
        return;
      }
      case 'read': {
        this.use(p, o.device);
        const expected = p.walk(o.device, o.at, o.length, READ);
        const out = new Uint8Array(o.length).fill(0xcd);
        const code = cuda.cuMemcpyDtoH(out, va(o.at), o.length);
        expect(code).toBe(typeof expected === 'number' ? expected : 0);
        if (typeof expected === 'number') {
          // Nothing was written into the host buffer.
          expect(Buffer.from(out.buffer).equals(UNTOUCHED.subarray(0, o.length))).toBe(true);
          return;
        }
        this.counters.reads++;
        let i = 0;
        for (const piece of expected) {
          const want = piece.m.handle.memory.bytes.subarray(piece.off, piece.off + piece.k);
          const got = out.subarray(i, i + piece.k);
          if (!Buffer.from(got.buffer, got.byteOffset, got.length).equals(want)) {
            expect(firstDiff(got, want), `bytes at 0x${(o.at + i).toString(16)}`).toBe(-1);
          }
          if (
            this.procs.some(
              (q) => q !== p && [...q.handles.values()].some((h) => h.memory === piece.m.handle.memory),
            )
          )
            this.counters.crossProcessReads++;
          i += piece.k;
        }
        return;
      }
      case 'copy': {
        this.use(p, o.device);
        const n = o.length;
        const src = p.walk(o.device, o.src, n, READ);
        const dst = p.walk(o.device, o.dst, n, WRITE);
        if (typeof src !== 'number' && typeof dst !== 'number' && overlaps(src, dst)) return; // undefined behaviour
        const code = cuda.cuMemcpyDtoD(va(o.dst), va(o.src), n);
        const expected = typeof src === 'number' ? src : typeof dst === 'number' ? dst : 0;
        expect(code).toBe(expected);
        if (code !== 0 || typeof src === 'number' || typeof dst === 'number') return;
        this.counters.copies++;
        const data = new Uint8Array(n);
        let i = 0;
        for (const s of src) {
          data.set(s.m.handle.memory.bytes.subarray(s.off, s.off + s.k), i);
          i += s.k;
        }
        i = 0;
        for (const d of dst) {
          d.m.handle.memory.bytes.set(data.subarray(i, i + d.k), d.off);
          i += d.k;
        }
        return;
      }
      case 'export': {
        const value = pickHandle(p, o.pick, 'live');
        const handle = p.handles.get(value);
        // Exporting an imported handle: the H200's answer is not recorded; left out.
        if (handle?.imported) return;
        const fd = { value: -1 };
        const code = cuda.cuMemExportToShareableHandle(
          fd,
          value,
          C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
          0,
        );
        const valid = handle !== undefined && handle.refs > 0 && handle.exportable;
        expect(code).toBe(valid ? 0 : 1);
        if (!valid) return;
        // The lowest free descriptor from 3.
        let lowest = 3;
        while (p.fds.has(lowest)) lowest++;
        expect(fd.value).toBe(lowest);
        p.fds.set(fd.value, handle.memory);
        if (o.pass) {
          const q = this.procs[1 - o.p];
          const passed = this.machine.passFd(cuda, fd.value, q.cuda);
          let qLowest = 3;
          while (q.fds.has(qLowest)) qLowest++;
          expect(passed).toBe(qLowest);
          q.fds.set(passed, handle.memory);
        }
        return;
      }
      case 'import': {
        const fds = [...p.fds.keys()];
        const fd = o.bogus || fds.length === 0 ? 1000 + (o.pick % 50) : fds[o.pick % fds.length];
        const h = { value: 0n };
        const code = cuda.cuMemImportFromShareableHandle(h, fd, C.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        const memory = p.fds.get(fd);
        expect(code).toBe(memory ? 0 : C.CUDA_ERROR_UNKNOWN);
        if (!memory) return;
        // A new handle value, even in the exporting process.
        expect(p.handles.has(h.value)).toBe(false);
        p.handles.set(h.value, {
          value: h.value,
          memory,
          exportable: false,
          imported: true,
          refs: 1,
          mapRefs: 0,
        });
        p.seen.add(h.value);
        return;
      }
      case 'reserveFree': {
        const r = { value: 0n };
        ok(cuda.cuMemAddressReserve(r, o.slots * G, 0, 0, 0));
        expect(r.value >= p.base + BigInt(SLOTS * G) || r.value + BigInt(o.slots * G) <= p.base).toBe(true);
        if (o.wrongSize) expect(cuda.cuMemAddressFree(r.value, (o.slots + 1) * G)).toBe(1);
        expect(cuda.cuMemAddressFree(r.value + BigInt(G), o.slots * G)).toBe(1);
        ok(cuda.cuMemAddressFree(r.value, o.slots * G));
        // Double free.
        expect(cuda.cuMemAddressFree(r.value, o.slots * G)).toBe(1);
        return;
      }
      case 'share': {
        // The valid sharing path: set up exportable memory here, export it, pass the descriptor to the
        // other process, which imports, maps and grants it.
        this.run({ op: 'setup', p: o.p, slot: o.slot, slots: o.slots, exportable: true });
        const q = this.procs[1 - o.p];
        const qFds = new Set(q.fds.keys());
        const created = [...p.handles.values()].filter((h) => h.refs > 0 && !h.imported);
        this.run({ op: 'export', p: o.p, pick: created.length - 1 + created.length * o.pick, pass: true });
        const passed = [...q.fds.keys()].filter((fd) => !qFds.has(fd));
        if (passed.length === 0) return;
        const fds = [...q.fds.keys()];
        const before = new Set(q.handles.keys());
        this.run({ op: 'import', p: 1 - o.p, pick: fds.indexOf(passed[0]), bogus: false });
        const live = [...q.handles.values()].filter((h) => h.refs > 0);
        const fresh = live.findIndex((h) => !before.has(h.value));
        const slots = live[fresh].memory.size / G;
        const start = q.slots.findIndex(
          (_, i) => i + slots <= SLOTS && q.slots.slice(i, i + slots).every((x) => x === undefined),
        );
        this.run({
          op: 'map',
          p: 1 - o.p,
          slot: start < 0 ? o.slot : start,
          pick: fresh,
          wrongSize: false,
          misaligned: false,
        });
        this.run({ op: 'grant', p: 1 - o.p, slot: start < 0 ? o.slot : start, device: 0, flags: 3 });
        return;
      }
      case 'freeMain': {
        const mapped = p.slots.some((m) => m !== undefined);
        const code = cuda.cuMemAddressFree(p.base, SLOTS * G);
        expect(code).toBe(mapped ? 1 : 0);
        if (code !== 0) return;
        // The same address comes back: first fit, and freed VA merges.
        const r = { value: 0n };
        ok(cuda.cuMemAddressReserve(r, SLOTS * G, 0, 0, 0));
        expect(r.value).toBe(p.base);
        return;
      }
    }
  }

  check(): void {
    for (const p of this.procs) {
      const rt = p.cuda.runtime;
      const backend = rt.backend as SimProcess;
      let end = 0;
      const real = [...rt.mappings()];
      for (const m of real) {
        // No overlapping mappings.
        expect(m.va).toBeGreaterThanOrEqual(end);
        end = m.end;
      }
      const model = p.mappings();
      expect(real.map((m) => [m.va, m.size])).toEqual(
        model.map((m) => [Number(p.base) + m.slot * G, m.slots * G]),
      );
      // No access without a grant: core's bits and every device's page table agree with the model.
      for (let d = 0; d < DEVICES; d++) {
        expect(real.map((m) => m.accessOf(d))).toEqual(model.map((m) => m.access[d]));
        expect(backend.pageTable(d)).toEqual(
          model
            .filter((m) => m.access[d] !== 0)
            .map((m) => ({ va: Number(p.base) + m.slot * G, size: m.slots * G, access: m.access[d] })),
        );
      }
      expect(rt.stats().handles).toBe(p.handles.size);
    }
    expect(this.machine.liveAllocations).toBe(this.liveMemories().size);
  }

  teardown(): void {
    for (const p of this.procs) {
      const cuda = p.cuda;
      const mapped = p.slots.some((m) => m !== undefined);
      expect(cuda.cuMemAddressFree(p.base, SLOTS * G)).toBe(mapped ? 1 : 0);
      for (const m of p.mappings()) {
        ok(cuda.cuMemUnmap(p.base + BigInt(m.slot * G), m.slots * G));
        p.unmap(m);
      }
      if (mapped) ok(cuda.cuMemAddressFree(p.base, SLOTS * G));
      for (const h of [...p.handles.values()]) {
        while (h.refs > 0) {
          ok(cuda.cuMemRelease(h.value));
          h.refs--;
        }
        p.forget(h);
        expect(cuda.cuMemRelease(h.value)).toBe(1);
      }
      expect(cuda.runtime.stats()).toEqual({ reservations: 0, mappings: 0, handles: 0, streams: 0 });
    }
    // Only open descriptors still hold memory; process exit closes them.
    expect(this.machine.liveAllocations).toBe(this.liveMemories().size);
    for (const p of this.procs) p.cuda.dispose();
    expect(this.machine.liveAllocations).toBe(0);
    expect(this.machine.devices.map((d) => d.pool.used)).toEqual([0, 0]);
    expect(this.machine.residentBytes).toBe(0);
  }
}

function pickHandle(p: ProcessModel, pick: number, kind: 'live' | 'seen' | 'bogus'): bigint {
  if (kind === 'bogus') return 0xdead_0000n + BigInt(pick % 5);
  const pool =
    kind === 'live' ? [...p.handles.values()].filter((h) => h.refs > 0).map((h) => h.value) : [...p.seen];
  return pool.length === 0 ? 0xbad0n : pool[pick % pool.length];
}

/** Whether the physical bytes of two piece lists intersect (copies between them are undefined). */
function overlaps(
  a: { m: MappingModel; off: number; k: number }[],
  b: { m: MappingModel; off: number; k: number }[],
): boolean {
  return a.some((x) =>
    b.some((y) => x.m.handle.memory === y.m.handle.memory && x.off < y.off + y.k && y.off < x.off + x.k),
  );
}

function firstDiff(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : a.length;
}

function ok(code: number): void {
  expect(code).toBe(C.CUDA_SUCCESS);
}

it('random CUDA call sequences in two processes agree with the shadow model and leak nothing', () => {
  const counters: Counters = {
    writes: 0,
    reads: 0,
    copies: 0,
    crossProcessReads: 0,
    refusedAccess: 0,
    releaseRefused: 0,
    mapOverlap: 0,
    emptyUnmap: 0,
  };
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 40, maxLength: 150 }), (ops) => {
      const world = new World(counters);
      try {
        for (const o of ops) {
          world.run(o);
          world.check();
        }
        world.teardown();
      } finally {
        for (const p of world.procs) p.cuda.dispose();
      }
    }),
    { numRuns: 100, seed: 20250607 },
  );
  // The generator reaches the interesting region: successful writes, reads and copies, refused accesses,
  // and reads of memory another process also holds.
  expect(counters.writes).toBeGreaterThan(300);
  expect(counters.reads).toBeGreaterThan(200);
  expect(counters.copies).toBeGreaterThan(50);
  expect(counters.refusedAccess).toBeGreaterThan(300);
  expect(counters.crossProcessReads).toBeGreaterThan(50);
  // And the invalid calls: a second release, a map over a mapping, an unmap of unmapped VA (0).
  expect(counters.releaseRefused).toBeGreaterThan(50);
  expect(counters.mapOverlap).toBeGreaterThan(50);
  expect(counters.emptyUnmap).toBeGreaterThan(20);
});
