/**
 * Where the driver's start-up heap puts lone small reservations, and what lies
 * right after them (Note [Driver VA placement] in src/backends/sim/driver-va.ts;
 * issue 17, item 2). In a fresh process the heap has a 2 MiB hole 74 MiB below
 * a 24 MiB run, with the driver's own memory between them
 * ([startupHeapFull] in conformance/results/h200-hint-probe.json), so a map
 * past the end of a reservation in the hole runs into taken address space
 * (Note [Mappings past a reservation's end]). These cases record, as offsets
 * in granules between bases, which reservations land in the hole, and what
 * else the process does (cuMemAlloc, a stream, an event, a created context)
 * takes it.
 */
import type { Define, Json, Trace } from './trace.js';

/*
 * Note [Start-up heap cases in a fresh process]
 * Where a small reservation lands depends on what the process reserved,
 * allocated and freed before (the start-up heap's 2 MiB hole), so these cases'
 * answers are the process's history as much as the code's. In prove.js's
 * worker, after hundreds of cases through vmmkit, lone reservations landed
 * side by side where the raw driver's recorder had them 37 granules apart
 * (the hole free). So prove.js runs each of these cases as the first case of
 * a fresh process, and conformance/gpu/fresh-cases.ts runs them so through
 * both the raw driver and vmmkit, repeatedly, to tell the driver's answers
 * from the process's.
 */

/** Whether a case runs first in a fresh process (Note [Start-up heap cases in a fresh process]). */
export function wantsFreshProcess(name: string): boolean {
  return name.startsWith('startupHeap.');
}

/** `p` in granules from `from` when the two are near each other, else 'elsewhere' (another heap). */
function granulesFrom(t: Trace, p: bigint, from: bigint): Json {
  const near = 1n << 30n;
  return p - from < near && from - p < near ? Number((p - from) / t.g) : 'elsewhere';
}

/** cuMemAlloc of `size` bytes, freed at cleanup; 0n on failure. */
function memAlloc(t: Trace, size: number, label = 'cuMemAlloc'): bigint {
  const box = { value: 0n };
  if (t.call(label, t.cu.cuMemAlloc(box, size)) !== 0) return 0n;
  const p = box.value;
  t.later('cuMemFree', () => t.cu.cuMemFree(p));
  return p;
}

/**
 * A map of `granules` at `base`, past the end of its reservation: whether what follows is free (the
 * Note). Unmapped at once, so the next map of the case does not meet it.
 */
function mapPast(t: Trace, base: bigint, label: string, granules = 2): void {
  const h = t.create(granules * t.G, t.prop(), 0, `${label}:create`);
  if (h && t.map(base, granules * t.G, h, label) === 0) t.unmap(base, granules * t.G, `${label}:unmap`);
}

/**
 * A reservation's base before and after `make` (which makes something of the
 * process's and undoes it at cleanup): whether the object took the lone
 * reservation's place, and whether a map past its end still fails.
 */
function loneAfter(t: Trace, make: () => boolean): void {
  const before = t.unreserved(t.G);
  if (!before || !make()) return;
  const a = t.reserve(t.G);
  if (!a) return;
  t.see('granulesFromBefore', granulesFrom(t, a, before));
  mapPast(t, a, 'mapPastLone');
}

export function startupHeapCases(def: Define): void {
  def('startupHeap.threeLoneReservations', (t) => {
    const a = t.reserve(t.G, 0, 0n, 0, 'reserveFirst');
    const b = a ? t.reserve(t.G, 0, 0n, 0, 'reserveSecond') : 0n;
    const c = b ? t.reserve(t.G, 0, 0n, 0, 'reserveThird') : 0n;
    if (!c) return;
    t.see('secondFromFirst', granulesFrom(t, b, a));
    t.see('thirdFromSecond', granulesFrom(t, c, b));
    mapPast(t, a, 'mapPastFirst');
    mapPast(t, c, 'mapPastThird');
  });
  def('startupHeap.fourMiBThenTwo', (t) => {
    const a = t.reserve(2 * t.G, 0, 0n, 0, 'reserve4MiB');
    const b = a ? t.reserve(t.G, 0, 0n, 0, 'reserve2MiB') : 0n;
    if (!b) return;
    t.see('twoFromFour', granulesFrom(t, b, a));
    mapPast(t, b, 'mapPastTwo');
    mapPast(t, a, 'mapPastFour', 3);
  });
  def('startupHeap.alignedTo4MiBThenLone', (t) => {
    const a = t.reserve(t.G, 2 * t.G, 0n, 0, 'reserveAligned');
    const b = a ? t.reserve(t.G, 0, 0n, 0, 'reserveLone') : 0n;
    if (!b) return;
    t.see('loneFromAligned', granulesFrom(t, b, a));
    mapPast(t, a, 'mapPastAligned');
    mapPast(t, b, 'mapPastLone');
  });
  def('startupHeap.hintsAroundTheHole', (t) => {
    const a = t.reserve(t.G);
    if (!a) return;
    // Just below the hole, and 2, 18 and 36 granules above it (36: the granule below the run).
    for (const k of [-1, 2, 18, 36]) {
      const hint = a + BigInt(k) * t.g;
      const box = { value: 0n };
      const code = t.cu.cuMemAddressReserve(box, t.G, 0, hint, 0);
      t.call(`hint${k}`, code);
      if (code !== 0) continue;
      t.see(`hint${k}:granulesFromLone`, granulesFrom(t, box.value, a));
      t.cu.cuMemAddressFree(box.value, t.G);
    }
  });
  def('startupHeap.fillTheRunThenMapPastItsEnd', (t) => {
    const first = t.reserve(t.G, 0, 0n, 0, 'reserveLone');
    if (!first) return;
    let last = first;
    for (let i = 0; i < 12; i++) {
      const p = t.reserve(t.G, 0, 0n, 0, `reserveRun${i}`);
      if (!p) return;
      last = p;
    }
    t.see('lastFromLone', granulesFrom(t, last, first));
    mapPast(t, last, 'mapPastLast');
  });
  def('startupHeap.loneAfterCuMemAlloc', (t) => {
    const p = memAlloc(t, t.G);
    const a = p ? t.reserve(t.G) : 0n;
    if (!a) return;
    t.see('loneFromAlloc', granulesFrom(t, a, p));
    mapPast(t, a, 'mapPastLone');
  });
  def('startupHeap.loneAfterCuMemAllocFreed', (t) => {
    const box = { value: 0n };
    if (t.call('cuMemAlloc', t.cu.cuMemAlloc(box, t.G)) !== 0) return;
    const p = box.value;
    t.call('cuMemFree', t.cu.cuMemFree(p));
    const a = t.reserve(t.G);
    if (!a) return;
    t.see('loneFromFreedAlloc', granulesFrom(t, a, p));
    mapPast(t, a, 'mapPastLone');
  });
  def('startupHeap.loneAfterSmallCuMemAlloc', (t) => {
    const p = memAlloc(t, 4096, 'cuMemAlloc4KiB');
    const a = p ? t.reserve(t.G) : 0n;
    if (!a) return;
    // From the granule the 4 KiB lie in, wherever in it the driver put them.
    t.see('loneFromAllocGranule', granulesFrom(t, a, p - (p % t.g)));
    mapPast(t, a, 'mapPastLone');
  });
  def('startupHeap.loneAfterStream', (t) => loneAfter(t, () => t.stream() !== 0n));
  def('startupHeap.loneAfterEvent', (t) =>
    loneAfter(t, () => {
      const box = { value: 0n };
      if (t.call('cuEventCreate', t.cu.cuEventCreate(box, 0)) !== 0) return false;
      const e = box.value;
      t.later('cuEventDestroy', () => t.cu.cuEventDestroy(e));
      return true;
    }),
  );
  def('startupHeap.loneAfterCreatedContext', (t) => loneAfter(t, () => createdContext(t)));
  // What the created context's own heap is (startupHeap.loneAfterCreatedContext: its hole 640 MiB below
  // the primary's): a second lone reservation, a second context, cuMemAlloc, and cuCtxDestroy.
  def('startupHeap.createdContextTwoLone', (t) => {
    const before = t.unreserved(t.G);
    if (!before || !createdContext(t)) return;
    const a = t.reserve(t.G, 0, 0n, 0, 'reserveFirst');
    const b = a ? t.reserve(t.G, 0, 0n, 0, 'reserveSecond') : 0n;
    if (!b) return;
    t.see('firstFromBefore', granulesFrom(t, a, before));
    t.see('secondFromFirst', granulesFrom(t, b, a));
    mapPast(t, a, 'mapPastFirst');
    mapPast(t, b, 'mapPastSecond');
  });
  def('startupHeap.twoCreatedContexts', (t) => {
    const before = t.unreserved(t.G);
    if (!before || !createdContext(t, 'cuCtxCreateFirst')) return;
    const a = t.reserve(t.G, 0, 0n, 0, 'reserveInFirst');
    if (!a || !createdContext(t, 'cuCtxCreateSecond')) return;
    const b = t.reserve(t.G, 0, 0n, 0, 'reserveInSecond');
    if (!b) return;
    t.see('inFirstFromBefore', granulesFrom(t, a, before));
    t.see('inSecondFromInFirst', granulesFrom(t, b, a));
  });
  def('startupHeap.cuMemAllocInCreatedContext', (t) => {
    const before = t.unreserved(t.G);
    if (!before || !createdContext(t)) return;
    const p = memAlloc(t, t.G);
    const a = p ? t.reserve(t.G) : 0n;
    if (!a) return;
    t.see('allocFromBefore', granulesFrom(t, p, before));
    t.see('loneFromAlloc', granulesFrom(t, a, p));
  });
  def('startupHeap.reservationOutlivesCreatedContext', (t) => {
    const before = t.unreserved(t.G);
    const current = { value: 0n };
    if (!before || t.cu.cuCtxGetCurrent(current) !== 0) return;
    const primary = current.value;
    const box = { value: 0n };
    if (t.call('cuCtxCreate', t.cu.cuCtxCreate(box, 0, t.env.dev)) !== 0) return;
    const a = t.reserve(t.G);
    t.call('cuCtxDestroy', t.cu.cuCtxDestroy(box.value));
    if (t.cu.cuCtxGetCurrent(current) !== 0 || current.value !== primary) t.cu.cuCtxSetCurrent(primary);
    if (!a) return;
    t.see('inContextFromBefore', granulesFrom(t, a, before));
    // The reservation is the process's, not the context's: it stays, and can be mapped.
    const h = t.create(t.G);
    if (h && t.map(a, t.G, h, 'mapAfterDestroy') === 0) t.unmap(a, t.G, 'unmapAfterDestroy');
    const b = t.reserve(t.G, 0, 0n, 0, 'reserveAfterDestroy');
    if (b) t.see('afterDestroyFromBefore', granulesFrom(t, b, before));
  });
}

/**
 * A context cuCtxCreate makes (current now), destroyed at cleanup after what the case made in it,
 * the primary context current again; false if it could not be made.
 */
function createdContext(t: Trace, label = 'cuCtxCreate'): boolean {
  const current = { value: 0n };
  if (t.cu.cuCtxGetCurrent(current) !== 0) return false;
  const primary = current.value;
  const box = { value: 0n };
  if (t.call(label, t.cu.cuCtxCreate(box, 0, t.env.dev)) !== 0) return false;
  const c = box.value;
  // Cleanup runs newest first: what the case made in the context goes, then the context.
  t.later('cuCtxDestroy', () => {
    const code = t.cu.cuCtxDestroy(c);
    if (t.cu.cuCtxGetCurrent(current) !== 0 || current.value !== primary) t.cu.cuCtxSetCurrent(primary);
    return code;
  });
  return true;
}
