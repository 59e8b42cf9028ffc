/** Helpers the fuzzer's call tables share. */
import type { RuntimeDescription } from '../../../src/core/runtime.js';
import type { Random } from './random.js';

/** A C integer argument as the number a front end would see, or NaN. */
export function asNumber(x: unknown): number {
  if (typeof x === 'bigint') return Number(x);
  if (typeof x === 'number') return x;
  return Number.NaN;
}

/** A byte count for copies and sets: small, sometimes zero, sometimes past a 64-byte buffer. */
export function smallCount(rng: Random): number | bigint {
  const n = rng.pick([0, 1, 8, 16, 33, 64, 64, 65]);
  return rng.chance(0.3) ? BigInt(n) : n;
}

/** The vendor calls a teardown makes. */
export interface TeardownCalls {
  unmap(va: number, size: number): number;
  freeReservation(base: number, size: number): number;
  freeMalloc(base: number): number;
  release(handle: number): number;
  describe(): RuntimeDescription;
}

/**
 * Release everything a process holds, through its vendor calls: unmap runs
 * of adjacent VMM mappings, free every reservation and one-step buffer,
 * release every handle reference. The names of the calls that failed.
 */
export function teardownRuns(layout: RuntimeDescription, calls: TeardownCalls, runs = true): string[] {
  const failed: string[] = [];
  const mappings = layout.reservations
    .filter((r) => r.origin === 'vmm')
    .flatMap((r) => r.mappings)
    .sort((x, y) => x.va - y.va);
  for (let i = 0; i < mappings.length; ) {
    const start = mappings[i]?.va ?? 0;
    let end = (mappings[i]?.va ?? 0) + (mappings[i]?.size ?? 0);
    i++;
    if (runs) {
      for (; i < mappings.length && mappings[i]?.va === end; i++) end += mappings[i]?.size ?? 0;
    }
    const code = calls.unmap(start, end - start);
    if (code !== 0) failed.push(`unmap 0x${start.toString(16)}+${end - start}: ${code}`);
  }
  const after = calls.describe();
  for (const r of after.reservations) {
    const code = r.origin === 'vmm' ? calls.freeReservation(r.base, r.size) : calls.freeMalloc(r.base);
    if (code !== 0) failed.push(`free ${r.origin} 0x${r.base.toString(16)}: ${code}`);
  }
  for (const a of calls.describe().allocations) {
    for (let k = 0; k < a.handleRefs; k++) {
      const code = calls.release(a.handle);
      if (code !== 0) failed.push(`release ${a.handle}: ${code}`);
    }
  }
  return failed;
}

/** The bytes a successful cuMemsetD16/D32 or hipMemsetD32 writes, little-endian, or undefined when not worth shadowing. */
export function widePattern(value: unknown, count: unknown, width: 2 | 4): Uint8Array | undefined {
  const n = asNumber(count);
  if (typeof value !== 'number' || !Number.isSafeInteger(n) || n < 0 || n * width > 1 << 16) return undefined;
  const v = width === 2 ? value & 0xffff : value >>> 0;
  const out = new Uint8Array(n * width);
  for (let i = 0; i < out.length; i++) out[i] = (v >>> (8 * (i % width))) & 0xff;
  return out;
}
