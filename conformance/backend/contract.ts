/**
 * The backend contract: what every Backend must do, written once as plain
 * checks (no test framework) so that vitest runs them against the simulator
 * here and a plain Node script runs them against the real driver on the GPU
 * machine. Each check gets a fresh backend and must leave it as it found it.
 *
 * Checks never assume fresh memory reads as zeros (the real driver gives
 * whatever was there) and compare error kinds only where every backend
 * agrees on them.
 */
import type { Backend } from '../../src/backend/backend.js';
import { isVmmError } from '../../src/core/errors.js';
import { Access, type AllocationProperties } from '../../src/core/types.js';

export interface ContractCheck {
  readonly name: string;
  readonly run: (b: Backend) => void;
}

const onDevice = (id: number): AllocationProperties => ({
  location: { type: 'device', id },
  handleTypes: 0,
  uncached: false,
});
const exportable: AllocationProperties = {
  location: { type: 'device', id: 0 },
  handleTypes: 1,
  uncached: false,
};

function granularity(b: Backend): number {
  return b.devices[0].recommendedGranularity;
}

function pattern(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`contract: ${message}`);
}

function assertEqualBytes(a: Uint8Array, b: Uint8Array, what: string): void {
  assert(a.length === b.length, `${what}: lengths ${a.length} and ${b.length}`);
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) throw new Error(`contract: ${what}: byte ${i} is ${a[i]}, expected ${b[i]}`);
  }
}

function assertThrowsVmm(fn: () => void, what: string): void {
  try {
    fn();
  } catch (e) {
    assert(isVmmError(e), `${what}: threw a non-VmmError: ${String(e)}`);
    return;
  }
  throw new Error(`contract: ${what}: did not fail`);
}

/** Reserve, create and map `size` bytes with read-write access for device 0; returns va, handle and an undo. */
function mapped(b: Backend, size: number, props = onDevice(0)): { va: number; h: number; undo: () => void } {
  const va = b.reserve(size, granularity(b), 0);
  const h = b.create(size, props);
  b.map(va, size, h, 0);
  b.setAccess(va, size, 0, Access.ReadWrite);
  return {
    va,
    h,
    undo: () => {
      b.unmap(va, size);
      b.release(h);
      b.free(va, size);
    },
  };
}

export const BACKEND_CONTRACT: readonly ContractCheck[] = [
  {
    name: 'describes at least one device with power-of-two granularities',
    run: (b) => {
      assert(b.devices.length > 0, 'no devices');
      for (const d of b.devices) {
        assert(d.totalMemory > 0, `device ${d.ordinal} has no memory`);
        for (const g of [d.minimumGranularity, d.recommendedGranularity]) {
          assert(g > 0 && (g & (g - 1)) === 0, `granularity ${g} is not a power of two`);
        }
        assert(d.recommendedGranularity >= d.minimumGranularity, 'recommended < minimum');
      }
    },
  },
  {
    name: 'reserves aligned, disjoint ranges and can reserve again after a free',
    run: (b) => {
      const g = granularity(b);
      const a = b.reserve(4 * g, g, 0);
      const c = b.reserve(4 * g, 4 * g, 0);
      assert(a % g === 0 && c % (4 * g) === 0, 'misaligned reservation');
      assert(a + 4 * g <= c || c + 4 * g <= a, 'reservations overlap');
      b.free(a, 4 * g);
      b.free(c, 4 * g);
      const d = b.reserve(4 * g, g, 0);
      b.free(d, 4 * g);
    },
  },
  {
    name: 'physical memory is accounted in memoryInfo until released',
    run: (b) => {
      const g = granularity(b);
      const before = b.memoryInfo(0);
      const h = b.create(8 * g, onDevice(0));
      const during = b.memoryInfo(0);
      b.release(h);
      const after = b.memoryInfo(0);
      assert(during.total === before.total, 'total changed');
      assert(before.free - during.free >= 8 * g, `free fell by ${before.free - during.free}, not ${8 * g}`);
      assert(after.free === before.free, 'memory not returned on release');
    },
  },
  {
    name: 'bytes written through a mapping read back the same',
    run: (b) => {
      const g = granularity(b);
      const { va, undo } = mapped(b, g);
      const data = pattern(g, 1);
      b.write(0, va, data, 0);
      const back = new Uint8Array(g);
      b.read(0, va, back, 0);
      assertEqualBytes(back, data, 'round trip');
      const piece = new Uint8Array(100);
      b.read(0, va + 4093, piece, 0);
      assertEqualBytes(piece, data.subarray(4093, 4193), 'unaligned read');
      undo();
    },
  },
  {
    name: 'a mapping grants no access until setAccess, and read access is read-only',
    run: (b) => {
      const g = granularity(b);
      const va = b.reserve(g, g, 0);
      const h = b.create(g, onDevice(0));
      b.map(va, g, h, 0);
      assertThrowsVmm(() => b.write(0, va, new Uint8Array(16), 0), 'write without access');
      assertThrowsVmm(() => b.read(0, va, new Uint8Array(16), 0), 'read without access');
      b.setAccess(va, g, 0, Access.ReadWrite);
      b.write(0, va, pattern(16, 2), 0);
      b.setAccess(va, g, 0, Access.Read);
      const back = new Uint8Array(16);
      b.read(0, va, back, 0);
      assertEqualBytes(back, pattern(16, 2), 'read-only read');
      assertThrowsVmm(() => b.write(0, va, new Uint8Array(16), 0), 'write with read access');
      b.unmap(va, g);
      b.release(h);
      b.free(va, g);
    },
  },
  {
    name: 'two mappings of one handle are aliases of the same bytes',
    run: (b) => {
      const g = granularity(b);
      const va = b.reserve(2 * g, g, 0);
      const h = b.create(g, onDevice(0));
      b.map(va, g, h, 0);
      b.map(va + g, g, h, 0);
      b.setAccess(va, 2 * g, 0, Access.ReadWrite);
      b.write(0, va + 10, pattern(64, 3), 0);
      const back = new Uint8Array(64);
      b.read(0, va + g + 10, back, 0);
      assertEqualBytes(back, pattern(64, 3), 'alias');
      b.unmap(va, 2 * g);
      b.release(h);
      b.free(va, 2 * g);
    },
  },
  {
    name: 'copies and fills cross the boundary between adjacent mappings',
    run: (b) => {
      const g = granularity(b);
      const va = b.reserve(4 * g, g, 0);
      const hs = [0, 1, 2, 3].map(() => b.create(g, onDevice(0)));
      for (const [i, h] of hs.entries()) b.map(va + i * g, g, h, 0);
      b.setAccess(va, 4 * g, 0, Access.ReadWrite);
      const data = pattern(g, 4);
      b.write(0, va + g / 2, data, 0);
      b.copy(0, va + 2 * g + g / 4, va + g / 2, g, 0);
      const back = new Uint8Array(g);
      b.read(0, va + 2 * g + g / 4, back, 0);
      assertEqualBytes(back, data, 'copy across mappings');
      b.fill(0, va + g - 8, 0xab, 16, 0);
      const filled = new Uint8Array(16);
      b.read(0, va + g - 8, filled, 0);
      assertEqualBytes(filled, new Uint8Array(16).fill(0xab), 'fill across mappings');
      b.unmap(va, 4 * g);
      for (const h of hs) b.release(h);
      b.free(va, 4 * g);
    },
  },
  {
    name: 'work queued on a stream is done by synchronisation',
    run: (b) => {
      const g = granularity(b);
      const { va, undo } = mapped(b, g);
      const s = b.createStream(0);
      const data = pattern(4096, 5);
      b.write(0, va, data, s);
      b.copy(0, va + 8192, va, 4096, s);
      const back = new Uint8Array(4096);
      b.read(0, va + 8192, back, s);
      b.synchronizeStream(s);
      assertEqualBytes(back, data, 'stream order');
      b.destroyStream(s);
      undo();
    },
  },
  {
    // Note [Forced stream destroy]: the simulator drops the queued work, the real driver finishes it.
    name: 'a stream destroyed with discard is gone at once; its queued work either never ran or ran whole',
    run: (b) => {
      const g = granularity(b);
      const { va, undo } = mapped(b, g);
      const before = pattern(4096, 12);
      const queued = pattern(4096, 13);
      b.write(0, va, before, 0);
      const s = b.createStream(0);
      b.write(0, va, queued, s);
      b.destroyStream(s, { discard: true });
      assertThrowsVmm(() => b.synchronizeStream(s), 'a stream destroyed with discard');
      b.synchronizeDevice(-1);
      const back = new Uint8Array(4096);
      b.read(0, va, back, 0);
      const same = (x: Uint8Array) => x.every((v, i) => back[i] === v);
      assert(same(before) || same(queued), 'the bytes are the old ones or the queued write, whole');
      undo();
    },
  },
  {
    name: 'the CPU loads and stores host-located memory once granted, and the device sees its bytes (Note [Host access])',
    run: (b) => {
      const g = granularity(b);
      const { va, undo } = mapped(b, g, {
        location: { type: 'host', id: 0 },
        handleTypes: 0,
        uncached: false,
      });
      b.setHostAccess(va, g, Access.ReadWrite);
      const data = pattern(4096, 21);
      b.hostWrite(va + 64, data);
      const viaDevice = new Uint8Array(4096);
      b.read(0, va + 64, viaDevice, 0);
      assertEqualBytes(viaDevice, data, "the device reads the CPU's store");
      const fromDevice = pattern(256, 22);
      b.write(0, va + g - 256, fromDevice, 0);
      const cpu = new Uint8Array(256);
      b.hostRead(va + g - 256, cpu);
      assertEqualBytes(cpu, fromDevice, "the CPU loads the device's write");
      b.setHostAccess(va, g, Access.None);
      undo();
    },
  },
  {
    name: 'an event marks stream order: another stream that waits on it sees the marked work (Note [Events])',
    run: (b) => {
      const g = granularity(b);
      const { va, undo } = mapped(b, g);
      const a = b.createStream(0);
      const w = b.createStream(0);
      const e = b.createEvent(0, false);
      assert(b.queryEvent(e), 'an event never recorded is complete');
      const data = pattern(4096, 11);
      b.write(0, va, data, a);
      b.recordEvent(e, a);
      b.streamWaitEvent(w, e);
      b.copy(0, va + 8192, va, 4096, w);
      const back = new Uint8Array(4096);
      b.read(0, va + 8192, back, w);
      // Only the waiting stream is synchronised: its wait orders the copy after the write.
      b.synchronizeStream(w);
      assertEqualBytes(back, data, 'wait on an event');
      b.synchronizeEvent(e);
      assert(b.queryEvent(e), 'a synchronised event is complete');
      // Recorded on stream 0, then synchronised: complete, and destroying it leaves the streams working.
      b.recordEvent(e, 0);
      b.synchronizeEvent(e);
      assert(b.queryEvent(e), 'an event recorded on stream 0 and synchronised is complete');
      b.destroyEvent(e);
      assertThrowsVmm(() => b.queryEvent(e), 'a destroyed event');
      // Timing events: a non-negative time between two completed records, none for a marker.
      const t0 = b.createEvent(0, true);
      const t1 = b.createEvent(0, true);
      b.recordEvent(t0, a);
      b.write(0, va, data, a);
      b.recordEvent(t1, a);
      b.synchronizeEvent(t1);
      const ms = b.elapsedTime(t0, t1);
      assert(Number.isFinite(ms) && ms >= 0, `elapsed time ${ms} ms is not a time`);
      const marker = b.createEvent(0, false);
      b.recordEvent(marker, a);
      b.synchronizeEvent(marker);
      assertThrowsVmm(() => b.elapsedTime(t0, marker), 'elapsed time to an event without timing');
      for (const x of [t0, t1, marker]) b.destroyEvent(x);
      b.destroyStream(a);
      b.destroyStream(w);
      undo();
    },
  },
  {
    name: 'unmap removes access; a new mapping starts with none',
    run: (b) => {
      const g = granularity(b);
      const { va, h, undo } = mapped(b, g);
      b.write(0, va, pattern(32, 6), 0);
      b.unmap(va, g);
      assertThrowsVmm(() => b.read(0, va, new Uint8Array(32), 0), 'read after unmap');
      b.map(va, g, h, 0);
      assertThrowsVmm(() => b.read(0, va, new Uint8Array(32), 0), 'read after re-map');
      b.setAccess(va, g, 0, Access.ReadWrite);
      const back = new Uint8Array(32);
      b.read(0, va, back, 0);
      assertEqualBytes(back, pattern(32, 6), 'bytes survive unmap and re-map');
      undo();
    },
  },
  {
    name: 'released memory stays mapped and readable until unmapped',
    run: (b) => {
      const g = granularity(b);
      const before = b.memoryInfo(0).free;
      const va = b.reserve(g, g, 0);
      const h = b.create(g, onDevice(0));
      b.map(va, g, h, 0);
      b.setAccess(va, g, 0, Access.ReadWrite);
      b.write(0, va, pattern(32, 7), 0);
      b.release(h);
      const back = new Uint8Array(32);
      b.read(0, va, back, 0);
      assertEqualBytes(back, pattern(32, 7), 'read after release');
      b.unmap(va, g);
      b.free(va, g);
      assert(b.memoryInfo(0).free === before, 'memory not freed by the last unmap');
    },
  },
  {
    name: 'an exported fd imports as a new handle to the same memory',
    run: (b) => {
      const g = granularity(b);
      const { va, h, undo } = mapped(b, g, exportable);
      b.write(0, va, pattern(64, 8), 0);
      const fd = b.exportFd(h);
      const imported = b.importFd(fd);
      b.closeFd(fd);
      assert(imported.size === g, `imported size ${imported.size}`);
      const vb = b.reserve(g, g, 0);
      b.map(vb, g, imported.handle, 0);
      b.setAccess(vb, g, 0, Access.ReadWrite);
      const back = new Uint8Array(64);
      b.read(0, vb, back, 0);
      assertEqualBytes(back, pattern(64, 8), 'imported bytes');
      b.unmap(vb, g);
      b.release(imported.handle);
      b.free(vb, g);
      undo();
    },
  },
  {
    name: 'memory of every device can be mapped and granted to device 0 (peer access where there are several)',
    run: (b) => {
      const g = granularity(b);
      for (const d of b.devices) {
        const { va, undo } = mapped(b, g, onDevice(d.ordinal));
        b.write(0, va, pattern(64, 9 + d.ordinal), 0);
        const back = new Uint8Array(64);
        b.read(0, va, back, 0);
        assertEqualBytes(back, pattern(64, 9 + d.ordinal), `device ${d.ordinal} memory through device 0`);
        undo();
      }
    },
  },
  {
    name: 'host-located memory is reached through device page tables',
    run: (b) => {
      const g = granularity(b);
      const { va, undo } = mapped(b, g, {
        location: { type: 'host', id: 0 },
        handleTypes: 0,
        uncached: false,
      });
      b.write(0, va, pattern(64, 20), 0);
      const back = new Uint8Array(64);
      b.read(0, va, back, 0);
      assertEqualBytes(back, pattern(64, 20), 'host memory');
      undo();
    },
  },
  {
    name: 'a map binds exactly the bytes asked for, from the offset asked for (or a whole-handle backend refuses)',
    run: (b) => {
      const g = granularity(b);
      const h = b.create(4 * g, onDevice(0));
      const whole = b.reserve(4 * g, g, 0);
      b.map(whole, 4 * g, h, 0);
      b.setAccess(whole, 4 * g, 0, Access.ReadWrite);
      const data = pattern(4 * g, 30);
      b.write(0, whole, data, 0);
      const va = b.reserve(4 * g, g, 0);
      const free = b.memoryInfo(0).free;
      if (b.partialMaps) {
        // Two pages from offset g, placed at va + g: exactly those bytes, and nothing around them.
        b.map(va + g, 2 * g, h, g);
        b.setAccess(va + g, 2 * g, 0, Access.ReadWrite);
        const back = new Uint8Array(2 * g);
        b.read(0, va + g, back, 0);
        assertEqualBytes(back, data.subarray(g, 3 * g), 'piece at an offset');
        assertThrowsVmm(() => b.read(0, va, new Uint8Array(8), 0), 'read before the piece');
        assertThrowsVmm(() => b.read(0, va + 3 * g, new Uint8Array(8), 0), 'read after the piece');
        // The pages around the piece are free address space: another handle maps there.
        const other = b.create(g, onDevice(0));
        b.map(va + 3 * g, g, other, 0);
        b.unmap(va + 3 * g, g);
        b.release(other);
        b.unmap(va + g, 2 * g);
      } else {
        for (const [offset, size] of [
          [0, 2 * g],
          [g, 2 * g],
          [g, 3 * g],
        ]) {
          try {
            b.map(va, size, h, offset);
          } catch (e) {
            assert(isVmmError(e) && e.kind === 'not-supported', `piece (${offset}, ${size}): ${String(e)}`);
            continue;
          }
          throw new Error(`contract: a whole-handle backend mapped ${size} bytes at offset ${offset}`);
        }
        // Nothing was mapped: the whole range takes the whole handle.
        b.map(va, 4 * g, h, 0);
        b.unmap(va, 4 * g);
      }
      assert(b.memoryInfo(0).free === free, 'a map changed free memory');
      b.unmap(whole, 4 * g);
      b.release(h);
      b.free(va, 4 * g);
      b.free(whole, 4 * g);
    },
  },
  {
    name: 'one handle mapped as pieces side by side reads as the whole (where pieces are supported)',
    run: (b) => {
      if (!b.partialMaps) return;
      const g = granularity(b);
      const h = b.create(3 * g, onDevice(0));
      const va = b.reserve(3 * g, g, 0);
      // Pieces in another order than the memory's: [2g..3g) first, then [0..2g).
      b.map(va, g, h, 2 * g);
      b.map(va + g, 2 * g, h, 0);
      b.setAccess(va, 3 * g, 0, Access.ReadWrite);
      const data = pattern(3 * g, 31);
      b.write(0, va, data, 0);
      const tail = new Uint8Array(g);
      b.read(0, va + 2 * g, tail, 0);
      assertEqualBytes(tail, data.subarray(2 * g), 'second piece');
      // Remap in memory order: the bytes land where the offsets say.
      b.unmap(va, g);
      b.unmap(va + g, 2 * g);
      b.map(va, 3 * g, h, 0);
      b.setAccess(va, 3 * g, 0, Access.ReadWrite);
      const back = new Uint8Array(3 * g);
      b.read(0, va, back, 0);
      assertEqualBytes(back.subarray(0, 2 * g), data.subarray(g), 'first two pages in memory order');
      assertEqualBytes(back.subarray(2 * g), data.subarray(0, g), 'last page in memory order');
      b.unmap(va, 3 * g);
      b.release(h);
      b.free(va, 3 * g);
    },
  },
  {
    name: 'access over several adjacent mappings is set at once; unmapping one leaves the other as it was',
    run: (b) => {
      const g = granularity(b);
      const va = b.reserve(2 * g, g, 0);
      const h1 = b.create(g, onDevice(0));
      const h2 = b.create(g, onDevice(0));
      b.map(va, g, h1, 0);
      b.map(va + g, g, h2, 0);
      b.setAccess(va, 2 * g, 0, Access.ReadWrite);
      b.write(0, va + g - 4, pattern(8, 32), 0);
      b.unmap(va, g);
      assertThrowsVmm(() => b.read(0, va, new Uint8Array(4), 0), 'read of the unmapped one');
      const back = new Uint8Array(4);
      b.read(0, va + g, back, 0);
      assertEqualBytes(back, pattern(8, 32).subarray(4), 'the other keeps its bytes and access');
      b.unmap(va + g, g);
      b.release(h1);
      b.release(h2);
      b.free(va, 2 * g);
    },
  },
  {
    name: 'an unmap right after a stream-0 device copy waits for it (the copy lands; nothing faults)',
    run: (b) => {
      const g = granularity(b);
      const n = 32 * g;
      const src = mapped(b, n);
      const dst = mapped(b, n);
      const data = pattern(4096, 33);
      b.write(0, src.va + n - 4096, data, 0);
      b.copy(0, dst.va, src.va, n, 0);
      src.undo();
      const back = new Uint8Array(4096);
      b.read(0, dst.va + n - 4096, back, 0);
      assertEqualBytes(back, data, 'copied bytes after the source was unmapped');
      dst.undo();
    },
  },
  {
    name: 'freeing a reservation with memory mapped in it fails and changes nothing',
    run: (b) => {
      const g = granularity(b);
      const { va, undo } = mapped(b, g);
      assertThrowsVmm(() => b.free(va, g), 'free while mapped');
      b.write(0, va, pattern(8, 21), 0);
      undo();
    },
  },
];

/** Run every check against fresh backends; returns one line per check. */
export function runBackendContract(make: () => Backend): { name: string; ok: boolean; error?: string }[] {
  return BACKEND_CONTRACT.map((check) => {
    const b = make();
    try {
      check.run(b);
      return { name: check.name, ok: true };
    } catch (e) {
      return { name: check.name, ok: false, error: e instanceof Error ? e.message : String(e) };
    } finally {
      b.dispose();
    }
  });
}
