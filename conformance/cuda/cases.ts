/**
 * Named edge cases of the CUDA VMM API. Each case runs a short sequence of
 * calls against a CudaApi and records every call's result code, plus values
 * that are the same on every machine (bytes read back, sizes, access flags,
 * property fields). Raw addresses and handle values are never recorded: only
 * offsets from a reservation base and "same value" booleans.
 *
 * Each case undoes what it made; cleanup calls are recorded too (as
 * `cleanup:<op>`), since their codes say what state the case left behind.
 *
 * Note [Cases that may poison the context]
 * A copy through a mapping without access, or past the end of a mapping, may
 * fault on the GPU, which makes the context unusable (a sticky error). Such
 * cases are marked `mayPoison`; the recorder runs them like any other, checks
 * the context after each case and restarts in a fresh process when it is gone,
 * and after every mayPoison case whatever it answers (a destroyed primary
 * context, say, leaves a process whose later cases would not be comparable).
 */
import {
  type Box,
  CU_MEM_ALLOC_GRANULARITY_MINIMUM,
  CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
  CU_MEM_HANDLE_TYPE_FABRIC,
  CU_MEM_HANDLE_TYPE_NONE,
  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
  CU_MEM_HANDLE_TYPE_WIN32,
  CU_MEM_LOCATION_TYPE_DEVICE,
  CU_MEM_LOCATION_TYPE_HOST,
  CU_MEM_LOCATION_TYPE_HOST_NUMA,
  CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT,
  type CudaApi,
  CU_MEM_ACCESS_FLAGS_PROT_NONE as NONE,
  CU_MEM_ACCESS_FLAGS_PROT_READ as READ,
  CU_MEM_ACCESS_FLAGS_PROT_READWRITE as RW,
} from './api.js';
import { captureCases } from './cases/capture.js';
import { contextV2Cases } from './cases/context-v2.js';
import { hostPointerCases } from './cases/host-pointers.js';
import { primaryDestroyCases } from './cases/primary-destroy.js';
import { settleCases } from './cases/settle.js';
import { startupHeapCases } from './cases/startup-heap.js';
import { stickyFaultCases } from './cases/sticky-fault.js';
import { type CaseInfo, type Define, hex, type Json, pattern, Trace } from './cases/trace.js';

export type { CaseEnv, CaseFn, CaseInfo, CaseRecord, Json, Step } from './cases/trace.js';
export { pattern } from './cases/trace.js';

const CASES: Record<string, CaseInfo> = {};

function def(name: string, body: (t: Trace) => void, mayPoison = false): void {
  if (CASES[name]) throw new Error(`duplicate case ${name}`);
  CASES[name] = {
    mayPoison,
    run: (cu, env) => {
      const t = new Trace(cu, env);
      try {
        body(t);
      } finally {
        t.cleanup();
      }
      return { steps: t.steps };
    },
  };
}

// ---------------------------------------------------------------- granularity

def('granularity.device.minimum', (t) => void t.gran('min', t.prop(), CU_MEM_ALLOC_GRANULARITY_MINIMUM));
def(
  'granularity.device.recommended',
  (t) => void t.gran('rec', t.prop(), CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
);
def('granularity.host', (t) => {
  const p = t.prop({ location: { type: CU_MEM_LOCATION_TYPE_HOST, id: 0 } });
  t.gran('min', p, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  t.gran('rec', p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
});
def('granularity.hostNuma', (t) => {
  t.gran('numa0', t.prop({ location: { type: CU_MEM_LOCATION_TYPE_HOST_NUMA, id: 0 } }), 0);
  t.gran('numaCurrent', t.prop({ location: { type: CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, id: 0 } }), 0);
});
def('granularity.badDeviceId', (t) => {
  t.gran('idCount', t.prop({ location: { type: CU_MEM_LOCATION_TYPE_DEVICE, id: t.env.deviceCount } }), 0);
  t.gran('idNegative', t.prop({ location: { type: CU_MEM_LOCATION_TYPE_DEVICE, id: -1 } }), 0);
});
def('granularity.badOption', (t) => {
  t.gran('option2', t.prop(), 2);
  t.gran('option99', t.prop(), 99);
});
def('granularity.badAllocationType', (t) => {
  t.gran('type0', t.prop({ type: 0 }), 0);
  t.gran('type2', t.prop({ type: 2 }), 0);
});
def('granularity.badLocationType', (t) => {
  t.gran('locType0', t.prop({ location: { type: 0, id: 0 } }), 0);
  t.gran('locType99', t.prop({ location: { type: 99, id: 0 } }), 0);
});
def('granularity.withHandleTypes', (t) => {
  t.gran('posixFd', t.prop({ requestedHandleTypes: CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR }), 0);
  t.gran('fabric', t.prop({ requestedHandleTypes: CU_MEM_HANDLE_TYPE_FABRIC }), 0);
  t.gran('bits0x40', t.prop({ requestedHandleTypes: 0x40 }), 0);
});

// ---------------------------------------------------------------- reserve

def('reserve.size0', (t) => void t.reserve(0));
def('reserve.notMultipleOfGranularity', (t) => void t.reserve(t.G + 4096));
def('reserve.smallerThanGranularity', (t) => void t.reserve(4096));
def('reserve.alignment0', (t) => {
  const p = t.reserve(t.G);
  if (p) t.see('alignedToGranularity', p % t.g === 0n);
});
def('reserve.alignmentPowerOfTwoLarge', (t) => {
  const a = 1n << 32n;
  const p = t.reserve(t.G, a);
  if (p) t.see('alignedTo4GiB', p % a === 0n);
});
def('reserve.alignmentNotPowerOfTwo', (t) => void t.reserve(t.G * 3, t.G * 3));
def('reserve.alignmentSmallerThanGranularity', (t) => {
  const p = t.reserve(t.G, 4096);
  if (p) t.see('alignedToGranularity', p % t.g === 0n);
});
def('reserve.alignmentNotMultipleOfGranularityOdd', (t) => void t.reserve(t.G, 3));
def('reserve.alignmentLargerThanSize', (t) => {
  const a = 1n << 30n;
  const p = t.reserve(t.G, a);
  if (p) t.see('alignedTo1GiB', p % a === 0n);
});
def('reserve.hintFree', (t) => {
  const size = 64 * t.G;
  const probe = t.unreserved(size);
  const p = t.reserve(size, 0, probe);
  if (p) t.see('gotHint', p === probe);
});
/**
 * A hint `offset` granules into a range of `freed` granules reserved and freed a moment before; records
 * whether the driver honoured it (it stops doing so inside freed reservations of 32 MiB or more).
 */
function hintIntoFreed(name: string, freed: number, offset: number, alignment = 0): void {
  def(name, (t) => {
    const probe = t.unreserved(freed * t.G);
    const hint = probe + BigInt(offset) * t.g;
    const p = t.reserve(t.G, alignment * t.G, hint);
    if (p) t.see('gotHint', p === hint);
  });
}
hintIntoFreed('reserve.hintSecondHalfOfFreed', 2, 1);
hintIntoFreed('reserve.hintSecondHalfOfFreedAligned', 2, 1, 1);
hintIntoFreed('reserve.hintInsideFreedLarge', 64, 8);
for (const mib of [8, 16, 32, 64]) {
  const granules = mib / 2;
  hintIntoFreed(`reserve.hintInto${mib}MiBFreedPlus2MiB`, granules, 1);
  hintIntoFreed(`reserve.hintInto${mib}MiBFreedPlusQuarter`, granules, granules / 4);
}
hintIntoFreed('reserve.hintFreeSmallerThanFreed', 2, 0);

// Where the driver puts a reservation (Note [Driver VA placement] in src/backends/sim/driver-va.ts): heaps of
// 32 MiB-granular chunks and one start-up heap. Offsets are recorded in granules only when the address is
// near the reference one (the start-up heap lies elsewhere on every machine).
const near = (t: Trace, p: bigint, from: bigint): Json =>
  p - from < 1n << 30n && from - p < 1n << 30n ? Number((p - from) / t.g) : 'elsewhere';
/** A request of `request` granules hinted `offset` granules into a just-freed range of `freed` granules. */
function hintPlacement(name: string, freed: number, offset: number, request: number, where = true): void {
  def(name, (t) => {
    const probe = t.unreserved(freed * t.G);
    const hint = probe + BigInt(offset) * t.g;
    const p = t.reserve(request * t.G, 0, hint);
    if (!p) return;
    t.see('gotHint', p === hint);
    if (where) t.see('granulesFromFreed', near(t, p, probe));
  });
}
hintPlacement('reserve.hintInto64MiBFreedPlus32MiBFor32MiB', 32, 16, 16);
hintPlacement('reserve.hintInto64MiBFreedPlus2MiBFor32MiB', 32, 1, 16);
hintPlacement('reserve.hintInto96MiBFreedPlus48MiBFor48MiB', 48, 24, 24);
hintPlacement('reserve.hintInto128MiBFreedPlus64MiBFor64MiB', 64, 32, 32);
hintPlacement('reserve.hintAtBaseOf64MiBFreedFor2MiB', 32, 0, 1);
// Past the start-up heap come the driver's own mappings, so where the new chunk lands is the machine's.
hintPlacement('reserve.hintAtBaseOf16MiBFreedFor32MiB', 8, 0, 16, false);
def('reserve.largeGetsChunkRoundedTo32MiB', (t) => {
  const a = t.reserve(24 * t.G, 0, 0n, 0, 'reserve48MiB');
  const b = t.reserve(24 * t.G, 0, 0n, 0, 'reserve48MiBAgain');
  if (a && b) t.see('granulesApart', near(t, b, a));
});
def('reserve.smallFillsNewestChunkTail', (t) => {
  const a = t.reserve(24 * t.G, 0, 0n, 0, 'reserve48MiB');
  const b = t.reserve(t.G, 0, 0n, 0, 'reserve2MiB');
  if (a && b) t.see('granulesAfterLarge', near(t, b, a));
});
def('reserve.hintIntoFreedLargeWhileItsChunkLives', (t) => {
  const a = t.reserve(24 * t.G, 0, 0n, 0, 'reserve48MiB');
  const b = t.reserve(t.G, 0, 0n, 0, 'reserve2MiBInItsChunk');
  if (!a || !b) return;
  t.free(a, 24 * t.G, 'free48MiB');
  const p = t.reserve(t.G, 0, a + t.g, 0, 'reserveInsideFreed');
  if (p) t.see('gotHint', p === a + t.g);
});
def('reserve.hintFreeInOlderChunkWhileNewerHasRoom', (t) => {
  const a = t.reserve(24 * t.G, 0, 0n, 0, 'reserveOlder48MiB');
  const b = t.reserve(24 * t.G, 0, 0n, 0, 'reserveNewer48MiB');
  if (!a || !b) return;
  const p = t.reserve(t.G, 0, a + 24n * t.g, 0, 'reserveInOlderTail');
  if (p) t.see('gotHint', p === a + 24n * t.g);
  const q = t.reserve(t.G, 0, a, 0, 'reserveHintedAtTakenOlder');
  if (q) t.see('granulesFromOlder', near(t, q, a));
});
def('reserve.freedLargeBaseReusedUnhinted', (t) => {
  const probe = t.unreserved(32 * t.G);
  const p = t.reserve(32 * t.G);
  if (p) t.see('sameBase', p === probe);
});
def('reserve.hintPastAddressSpace', (t) => void t.reserve(t.G, 0, 0x8100_0000_0000n));
def('reserve.alignedChunkSpansTheAlignment', (t) => {
  // A 34 MiB reservation aligned to 128 MiB gets a 128 MiB chunk, so 64 MiB past its base is still a heap's.
  const a = t.reserve(17 * t.G, 64 * t.G, 0n, 0, 'reserve34MiBAligned128MiB');
  if (!a) return;
  t.see('alignedTo128MiB', a % (64n * t.g) === 0n);
  const p = t.reserve(t.G, 0, a + 32n * t.g, 0, 'reserve64MiBPastIt');
  if (p) t.see('gotHint', p === a + 32n * t.g);
});
def('reserve.hintTaken', (t) => {
  const a = t.reserve(t.G);
  const b = t.reserve(t.G, 0, a, 0, 'reserveAtTaken');
  if (b) t.see('gotHint', b === a);
});
def('reserve.hintMisaligned', (t) => {
  const probe = t.unreserved(4 * t.G);
  const p = t.reserve(t.G, 0, probe + 4096n);
  if (p) t.see('offsetFromHint', Number(p - probe));
});
def('reserve.flags1', (t) => void t.reserve(t.G, 0, 0n, 1));
def('reserve.huge1TiB', (t) => void t.reserve(2 ** 40));
def('reserve.enormous2pow62', (t) => void t.reserve(1n << 62n));
def('reserve.twoDoNotOverlap', (t) => {
  const a = t.reserve(4 * t.G);
  const b = t.reserve(4 * t.G);
  if (a && b) t.see('disjoint', a + 4n * t.g <= b || b + 4n * t.g <= a);
});

// ---------------------------------------------------------------- addressFree

def('addressFree.exact', (t) => {
  const p = t.reserve(2 * t.G);
  if (p) t.free(p, 2 * t.G);
});
def('addressFree.sizeSmaller', (t) => {
  const p = t.reserve(2 * t.G);
  if (p) t.free(p, t.G);
});
def('addressFree.sizeLarger', (t) => {
  const p = t.reserve(2 * t.G);
  if (p) t.free(p, 4 * t.G);
});
def('addressFree.sizeZero', (t) => {
  const p = t.reserve(2 * t.G);
  if (p) t.free(p, 0);
});
def('addressFree.interiorPointer', (t) => {
  const p = t.reserve(2 * t.G);
  if (p) t.free(p + t.g, t.G);
});
def('addressFree.twice', (t) => {
  const p = t.reserve(2 * t.G);
  if (p) {
    t.free(p, 2 * t.G, 'free1');
    t.call('free2', t.cu.cuMemAddressFree(p, 2 * t.G));
  }
});
def('addressFree.withMappingInside', (t) => {
  const { base, h } = t.mapped(t.G, null);
  if (!base || !h) return;
  const code = t.call('freeWhileMapped', t.cu.cuMemAddressFree(base, t.G));
  if (code === 0) {
    // The reservation is gone: see what is left of the mapping.
    t.call('unmapAfterFree', t.cu.cuMemUnmap(base, t.G));
  } else {
    t.unmap(base, t.G);
    t.free(base, t.G, 'freeAfterUnmap');
  }
});
def('addressFree.null', (t) => void t.call('free0', t.cu.cuMemAddressFree(0n, t.G)));
def('addressFree.neverReserved', (t) => {
  const p = t.unreserved(t.G);
  t.call('free', t.cu.cuMemAddressFree(p, t.G));
});
def('addressFree.splitReservationHalves', (t) => {
  const p = t.reserve(2 * t.G);
  if (!p) return;
  t.call('freeFirstHalf', t.cu.cuMemAddressFree(p, t.G));
  t.call('freeSecondHalf', t.cu.cuMemAddressFree(p + t.g, t.G));
  t.call('freeWhole', t.cu.cuMemAddressFree(p, 2 * t.G));
});

// ---------------------------------------------------------------- create

def('create.size0', (t) => void t.create(0));
def('create.notMultipleOfGranularity', (t) => void t.create(t.G + 4096));
def('create.smallerThanGranularity', (t) => void t.create(4096));
def('create.allocationType0', (t) => void t.create(t.G, t.prop({ type: 0 })));
def('create.allocationType2', (t) => void t.create(t.G, t.prop({ type: 2 })));
def('create.locationType0', (t) => void t.create(t.G, t.prop({ location: { type: 0, id: 0 } })));
def('create.locationType99', (t) => void t.create(t.G, t.prop({ location: { type: 99, id: 0 } })));
def(
  'create.deviceIdOutOfRange',
  (t) =>
    void t.create(t.G, t.prop({ location: { type: CU_MEM_LOCATION_TYPE_DEVICE, id: t.env.deviceCount } })),
);
def(
  'create.deviceIdNegative',
  (t) => void t.create(t.G, t.prop({ location: { type: CU_MEM_LOCATION_TYPE_DEVICE, id: -1 } })),
);
def('create.host', (t) => {
  const h = t.create(t.G, t.prop({ location: { type: CU_MEM_LOCATION_TYPE_HOST, id: 0 } }));
  if (h) t.props(h);
});
def('create.hostNuma0', (t) => {
  const h = t.create(t.G, t.prop({ location: { type: CU_MEM_LOCATION_TYPE_HOST_NUMA, id: 0 } }));
  if (h) t.props(h);
});
def('create.flags1', (t) => void t.create(t.G, t.prop(), 1));
def('create.handleTypePosixFd', (t) => {
  const h = t.create(t.G, t.prop({ requestedHandleTypes: CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR }));
  if (h) t.props(h);
});
def(
  'create.handleTypeFabric',
  (t) => void t.create(t.G, t.prop({ requestedHandleTypes: CU_MEM_HANDLE_TYPE_FABRIC })),
);
def(
  'create.handleTypeWin32',
  (t) => void t.create(t.G, t.prop({ requestedHandleTypes: CU_MEM_HANDLE_TYPE_WIN32 })),
);
def('create.handleTypeInvalidBits', (t) => void t.create(t.G, t.prop({ requestedHandleTypes: 0x40 })));
def('create.outOfMemory2x', (t) => {
  const size = BigInt(Math.ceil((2 * t.env.totalMem) / t.G)) * t.g;
  t.create(size);
});
def('create.outOfMemoryJustOver', (t) => {
  const size = BigInt(Math.ceil(t.env.totalMem / t.G) + 1) * t.g;
  t.create(size);
});
def('create.gpuDirectRDMACapable', (t) => {
  const h = t.create(t.G, t.prop({ allocFlags: { gpuDirectRDMACapable: 1 } }));
  if (h) t.props(h);
});
def('create.distinctHandles', (t) => {
  const a = t.create(t.G, t.prop(), 0, 'create1');
  const b = t.create(t.G, t.prop(), 0, 'create2');
  if (a && b) t.see('distinct', a !== b);
});
def('create.largeOneGiB', (t) => {
  const h = t.create(512 * t.G);
  if (h) t.props(h);
});

// ---------------------------------------------------------------- release

def('release.twice', (t) => {
  const h = t.create(t.G);
  if (!h) return;
  t.release(h, 'release1');
  t.call('release2', t.cu.cuMemRelease(h));
});
def('release.bogusHandles', (t) => {
  t.call('release0', t.cu.cuMemRelease(0n));
  t.call('releaseDeadbeef', t.cu.cuMemRelease(0xdeadbeefn));
});
def('release.whileMappedThenAccessBytes', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  const data = pattern(64, 1);
  t.write(base, data);
  t.release(h, 'releaseWhileMapped');
  t.readEquals(base, data, 'readAfterRelease');
  t.write(base + 4096n, data, 'writeAfterRelease');
  t.getAccess(base, 'getAccessAfterRelease');
  const r = { value: 0n };
  t.call('retainAfterRelease', t.cu.cuMemRetainAllocationHandle(r, base));
  if (r.value) t.owns(r.value);
  t.unmap(base, t.G, 'unmapAfterRelease');
  t.call('releaseAgainAfterUnmap', t.cu.cuMemRelease(h));
});
def('release.whileMappedThenSetAccess', (t) => {
  const { base, h } = t.mapped(t.G, null);
  if (!base || !h) return;
  t.release(h, 'releaseWhileMapped');
  t.access(base, t.G, RW, 'setAccessAfterRelease');
  t.write(base, pattern(16, 2), 'writeAfterRelease');
  t.unmap(base, t.G);
});
def('release.thenMapReleasedHandle', (t) => {
  const base = t.reserve(t.G);
  const h = t.create(t.G);
  if (!base || !h) return;
  t.release(h);
  t.map(base, t.G, h, 'mapReleased');
});

// ---------------------------------------------------------------- map

def('map.outsideAnyReservation', (t) => {
  const h = t.create(t.G);
  const p = t.unreserved(t.G);
  if (h && p) t.map(p, t.G, h);
});
def('map.misalignedPointer', (t) => {
  const base = t.reserve(2 * t.G);
  const h = t.create(t.G);
  if (base && h) t.map(base + 4096n, t.G, h);
});
def('map.sizeNotMultiple', (t) => {
  const base = t.reserve(2 * t.G);
  const h = t.create(2 * t.G);
  if (base && h) t.map(base, t.G + 4096, h);
});
def('map.sizeSmallerThanHandle', (t) => {
  const base = t.reserve(2 * t.G);
  const h = t.create(2 * t.G);
  if (!base || !h) return;
  if (t.map(base, t.G, h) === 0) {
    t.access(base, t.G, RW);
    const data = pattern(32, 3);
    t.write(base, data);
    t.readEquals(base, data);
  }
});
def('map.sizeLargerThanHandle', (t) => {
  const base = t.reserve(2 * t.G);
  const h = t.create(t.G);
  if (base && h) t.map(base, 2 * t.G, h);
});
def('map.sizeZero', (t) => {
  const base = t.reserve(t.G);
  const h = t.create(t.G);
  if (base && h) t.map(base, 0, h);
});
def('map.offsetNonZero', (t) => {
  const base = t.reserve(2 * t.G);
  const h = t.create(2 * t.G);
  if (!base || !h) return;
  t.map(base, t.G, h, 'mapOffsetG', t.G);
  t.map(base, 2 * t.G, h, 'mapOffsetGsize2G', t.G);
  t.map(base, t.G, h, 'mapOffset4096', 4096);
});
def('map.flags1', (t) => {
  const base = t.reserve(t.G);
  const h = t.create(t.G);
  if (base && h) t.map(base, t.G, h, 'map', 0, 1);
});
def('map.overlapSameRange', (t) => {
  const base = t.reserve(t.G);
  const h1 = t.create(t.G, t.prop(), 0, 'create1');
  const h2 = t.create(t.G, t.prop(), 0, 'create2');
  if (!base || !h1 || !h2) return;
  t.map(base, t.G, h1, 'map1');
  t.map(base, t.G, h2, 'map2SameRange');
});
def('map.overlapSameHandleTwice', (t) => {
  const base = t.reserve(t.G);
  const h = t.create(t.G);
  if (!base || !h) return;
  t.map(base, t.G, h, 'map1');
  t.map(base, t.G, h, 'map2');
});
def('map.overlapPartial', (t) => {
  const base = t.reserve(3 * t.G);
  const h1 = t.create(2 * t.G, t.prop(), 0, 'create1');
  const h2 = t.create(2 * t.G, t.prop(), 0, 'create2');
  if (!base || !h1 || !h2) return;
  t.map(base, 2 * t.G, h1, 'map1');
  t.map(base + t.g, 2 * t.G, h2, 'map2Overlapping');
});
def('map.spanningTwoReservations', (t) => {
  // Two reservations placed side by side through hints inside a freed range.
  const probe = t.unreserved(4 * t.G);
  const a = t.reserve(t.G, 0, probe, 0, 'reserveA');
  const b = a ? t.reserve(t.G, 0, a + t.g, 0, 'reserveB') : 0n;
  const h = t.create(2 * t.G);
  if (!a || !b || !h) return;
  t.see('adjacent', b === a + t.g);
  if (b !== a + t.g) return;
  if (t.map(a, 2 * t.G, h, 'mapAcross') === 0) {
    t.access(a, 2 * t.G, RW, 'setAccessAcross');
    const data = pattern(64, 4);
    t.write(a + t.g - 32n, data, 'writeAcross');
    t.readEquals(a + t.g - 32n, data, 'readAcross');
    t.unmap(a, 2 * t.G, 'unmapAcross');
  }
  t.call('freeBothAtOnce', t.cu.cuMemAddressFree(a, 2 * t.G));
});
def('map.aliasSameHandleTwoRanges', (t) => {
  const base = t.reserve(2 * t.G);
  const h = t.create(t.G);
  if (!base || !h) return;
  t.map(base, t.G, h, 'mapA');
  t.map(base + t.g, t.G, h, 'mapB');
  t.access(base, 2 * t.G, RW);
  const data = pattern(64, 5);
  t.write(base + 100n, data, 'writeA');
  t.readEquals(base + t.g + 100n, data, 'readBSeesA');
  t.call('memsetB', t.cu.cuMemsetD8(base + t.g, 0xab, 16));
  t.read(base, 16, 'readASeesB');
});
def('map.aliasTwoReservations', (t) => {
  const a = t.reserve(t.G, 0, 0n, 0, 'reserveA');
  const b = t.reserve(t.G, 0, 0n, 0, 'reserveB');
  const h = t.create(t.G);
  if (!a || !b || !h) return;
  t.map(a, t.G, h, 'mapA');
  t.map(b, t.G, h, 'mapB');
  t.access(a, t.G, RW, 'setAccessA');
  t.access(b, t.G, READ, 'setAccessBRead');
  const data = pattern(32, 6);
  t.write(a, data, 'writeA');
  t.readEquals(b, data, 'readB');
  t.getAccess(a, 'getAccessA');
  t.getAccess(b, 'getAccessB');
});
def('map.atReservationEnd', (t) => {
  const base = t.reserve(2 * t.G);
  const h = t.create(t.G);
  if (!base || !h) return;
  if (t.map(base + t.g, t.G, h, 'mapLastGranule') === 0) {
    t.access(base + t.g, t.G, RW);
    const data = pattern(16, 7);
    t.write(base + 2n * t.g - 16n, data, 'writeLastBytes');
    t.readEquals(base + 2n * t.g - 16n, data, 'readLastBytes');
  }
});
def('map.pastReservationEnd', (t) => {
  const base = t.reserve(2 * t.G);
  const h = t.create(2 * t.G);
  if (!base || !h) return;
  if (t.map(base + t.g, 2 * t.G, h, 'mapPastEnd') !== 0) return;
  t.access(base + t.g, 2 * t.G, RW, 'setAccessPastEnd');
  t.getAccess(base + 2n * t.g + 16n, 'getAccessPastEnd');
  const data = pattern(16, 40);
  t.write(base + 2n * t.g + 16n, data, 'writePastEnd');
  t.readEquals(base + 2n * t.g + 16n, data, 'readPastEnd');
  t.call('freeWhileMappedPastEnd', t.cu.cuMemAddressFree(base, 2 * t.G));
});
def('map.pastReservationEndIntoFreedRange', (t) => {
  // The range after the reservation was just freed, so nobody else owns it.
  const probe = t.unreserved(8 * t.G);
  const base = t.reserve(2 * t.G, 0, probe);
  const h = t.create(2 * t.G);
  if (!base || !h) return;
  t.see('gotHint', base === probe);
  t.map(base + t.g, 2 * t.G, h, 'mapPastEnd');
  t.map(base + 4n * t.g, 2 * t.G, h, 'mapEntirelyOutside');
});
def('map.pastReservationEndIntoNextReservation', (t) => {
  const probe = t.unreserved(4 * t.G);
  const a = t.reserve(2 * t.G, 0, probe, 0, 'reserveA');
  const b = a ? t.reserve(2 * t.G, 0, a + 2n * t.g, 0, 'reserveB') : 0n;
  const h = t.create(2 * t.G);
  if (!a || !b || !h) return;
  t.see('adjacent', b === a + 2n * t.g);
  t.map(a + t.g, 2 * t.G, h, 'mapAcrossIntoB');
});
// Maps larger than the reservation they start in (issue 17): which of size, start offset and what
// lies after the reservation decides the answer.
/**
 * A `mapped`-granule map `at` granules into a lone reservation of `reserved` granules; where it fails,
 * whether the address space just past the reservation's end was free (a hint there honoured).
 */
function mapIntoLone(t: Trace, reserved: number, at: number, mapped: number, label: string): void {
  const base = t.reserve(reserved * t.G);
  const h = t.create(mapped * t.G);
  if (!base || !h) return;
  if (t.map(base + BigInt(at) * t.g, mapped * t.G, h, label) === 0) return;
  const end = base + BigInt(reserved) * t.g;
  const box = { value: 0n };
  const code = t.cu.cuMemAddressReserve(box, t.G, 0, end, 0);
  t.see('tailFree', code === 0 && box.value === end);
  if (code === 0) t.cu.cuMemAddressFree(box.value, t.G);
}
/** The same at the start of a range just freed, so the address space past the reservation is free. */
function mapIntoFreedRange(t: Trace, reserved: number, at: number, mapped: number, label: string): void {
  const probe = t.unreserved(8 * t.G);
  const base = t.reserve(reserved * t.G, 0, probe);
  const h = t.create(mapped * t.G);
  if (!base || !h) return;
  t.see('gotHint', base === probe);
  t.map(base + BigInt(at) * t.g, mapped * t.G, h, label);
}
def('map.overReservationLoneAtStart', (t) => mapIntoLone(t, 1, 0, 2, 'mapTwiceTheReservation'));
def('map.overReservationAtStartIntoFreedRange', (t) =>
  mapIntoFreedRange(t, 1, 0, 2, 'mapTwiceTheReservation'),
);
def('map.overReservationInsideIntoFreedRange', (t) => mapIntoFreedRange(t, 2, 1, 3, 'mapLargerFromInside'));
def('map.overReservationLoneInside', (t) => mapIntoLone(t, 2, 1, 3, 'mapLargerFromInside'));
def('map.overReservationAtStartIntoNextReservation', (t) => {
  const probe = t.unreserved(8 * t.G);
  const a = t.reserve(t.G, 0, probe, 0, 'reserveA');
  const b = a ? t.reserve(4 * t.G, 0, a + t.g, 0, 'reserveB') : 0n;
  const h = t.create(3 * t.G);
  if (!a || !b || !h) return;
  t.see('adjacent', b === a + t.g);
  t.map(a, 3 * t.G, h, 'mapAcrossIntoB');
});
def('map.overReservationFourTimes', (t) => mapIntoFreedRange(t, 1, 0, 4, 'mapFourTimesTheReservation'));
def('map.pastReservationEndSmallerThanReservation', (t) => mapIntoLone(t, 4, 3, 2, 'mapPastEnd'));
def('map.nullPointer', (t) => {
  const h = t.create(t.G);
  if (h) t.map(0n, t.G, h, 'mapNull');
});
def('map.bogusHandles', (t) => {
  const base = t.reserve(t.G);
  if (!base) return;
  t.map(base, t.G, 0n, 'mapHandle0');
  t.map(base, t.G, 0xdeadbeefn, 'mapHandleDeadbeef');
});
def('map.insideLargerReservation', (t) => {
  const base = t.reserve(8 * t.G);
  const h = t.create(t.G);
  if (!base || !h) return;
  if (t.map(base + 3n * t.g, t.G, h, 'mapAt3G') === 0) {
    t.access(base + 3n * t.g, t.G, RW);
    t.write(base + 3n * t.g, pattern(16, 8));
    t.read(base + 3n * t.g, 16);
  }
});
def('map.grantsNoAccess', (t) => {
  const { base, h } = t.mapped(t.G, null);
  if (base && h) t.getAccess(base, 'getAccessAfterMap');
});
def('map.hostAllocation', (t) => {
  const base = t.reserve(t.G);
  const h = t.create(t.G, t.prop({ location: { type: CU_MEM_LOCATION_TYPE_HOST, id: 0 } }));
  if (!base || !h) return;
  if (t.map(base, t.G, h) === 0) {
    t.access(base, t.G, RW, 'setAccessDevice');
    t.getAccess(base, 'getAccessDevice');
    const data = pattern(32, 9);
    t.write(base, data);
    t.readEquals(base, data);
  }
});

// ---------------------------------------------------------------- setAccess

def('setAccess.none', (t) => {
  const { base, h } = t.mapped(t.G, null);
  if (!base || !h) return;
  t.access(base, t.G, NONE, 'setNone');
  t.getAccess(base);
});
def('setAccess.read', (t) => {
  const { base, h } = t.mapped(t.G, null);
  if (!base || !h) return;
  t.access(base, t.G, READ, 'setRead');
  t.getAccess(base);
  t.read(base, 8, 'readUntouched');
});
def('setAccess.readWrite', (t) => {
  const { base, h } = t.mapped(t.G, null);
  if (!base || !h) return;
  t.access(base, t.G, RW, 'setReadWrite');
  t.getAccess(base);
});
def('setAccess.readWriteThenNone', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  t.write(base, pattern(16, 10));
  t.access(base, t.G, NONE, 'setNone');
  t.getAccess(base, 'getAccessAfterNone');
});
def('setAccess.readWriteThenReadThenRead', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  const data = pattern(16, 11);
  t.write(base, data);
  t.access(base, t.G, READ, 'downgradeToRead');
  t.getAccess(base, 'getAccessAfterDowngrade');
  t.readEquals(base, data, 'readAfterDowngrade');
  t.access(base, t.G, RW, 'upgradeToReadWrite');
  t.write(base, pattern(16, 12), 'writeAfterUpgrade');
  t.read(base, 16, 'readAfterUpgrade');
});
def('setAccess.badFlags', (t) => {
  const { base, h } = t.mapped(t.G, null);
  if (!base || !h) return;
  t.access(base, t.G, 2, 'flags2');
  t.access(base, t.G, 4, 'flags4');
  t.access(base, t.G, 7, 'flags7');
  t.access(base, t.G, -1, 'flagsMinus1');
  t.getAccess(base);
});
def('setAccess.count0', (t) => {
  const { base, h } = t.mapped(t.G, null);
  if (!base || !h) return;
  t.setAccess(base, t.G, [], 0, 'count0');
  t.getAccess(base);
});
def('setAccess.badDeviceId', (t) => {
  const { base, h } = t.mapped(t.G, null);
  if (!base || !h) return;
  t.setAccess(base, t.G, [t.desc(RW, t.env.deviceCount)], 1, 'idCount');
  t.setAccess(base, t.G, [t.desc(RW, -1)], 1, 'idNegative');
  t.getAccess(base);
});
def('setAccess.locationHost', (t) => {
  const { base, h } = t.mapped(t.G, null);
  if (!base || !h) return;
  t.setAccess(base, t.G, [t.desc(RW, 0, CU_MEM_LOCATION_TYPE_HOST)], 1, 'host');
  t.setAccess(base, t.G, [t.desc(RW, 0, CU_MEM_LOCATION_TYPE_HOST_NUMA)], 1, 'hostNuma');
  t.setAccess(base, t.G, [t.desc(RW, 0, 0)], 1, 'locType0');
  t.getAccess(base);
});
def('setAccess.twoDescriptorsSameDevice', (t) => {
  const { base, h } = t.mapped(t.G, null);
  if (!base || !h) return;
  t.setAccess(base, t.G, [t.desc(RW), t.desc(READ)], 2, 'rwThenRead');
  t.getAccess(base, 'getAccessAfterRwThenRead');
  t.setAccess(base, t.G, [t.desc(READ), t.desc(RW)], 2, 'readThenRw');
  t.getAccess(base, 'getAccessAfterReadThenRw');
});
def('setAccess.partOfMapping', (t) => {
  const { base, h } = t.mapped(2 * t.G, null);
  if (!base || !h) return;
  t.access(base, t.G, RW, 'firstHalf');
  t.getAccess(base, 'getAccessFirstHalf');
  t.getAccess(base + t.g, 'getAccessSecondHalf');
});
def('setAccess.startMidMapping', (t) => {
  const { base, h } = t.mapped(2 * t.G, null);
  if (!base || !h) return;
  t.access(base + t.g, t.G, RW, 'secondHalf');
  t.getAccess(base, 'getAccessFirstHalf');
  t.getAccess(base + t.g, 'getAccessSecondHalf');
});
def('setAccess.unalignedRange', (t) => {
  const { base, h } = t.mapped(t.G, null);
  if (!base || !h) return;
  t.access(base + 4096n, t.G - 4096, RW, 'offset4096');
  t.access(base, 4096, RW, 'size4096');
  t.getAccess(base);
});
def('setAccess.twoAdjacentMappingsAtOnce', (t) => {
  const { base, h1, h2 } = t.twoAdjacent(t.G, null);
  if (!base || !h1 || !h2) return;
  t.access(base, 2 * t.G, RW, 'setAccessBoth');
  t.getAccess(base, 'getAccess1');
  t.getAccess(base + t.g, 'getAccess2');
});
def('setAccess.rangeWithHole', (t) => {
  const base = t.reserve(3 * t.G);
  const h1 = t.create(t.G, t.prop(), 0, 'create1');
  const h2 = t.create(t.G, t.prop(), 0, 'create2');
  if (!base || !h1 || !h2) return;
  t.map(base, t.G, h1, 'map1');
  t.map(base + 2n * t.g, t.G, h2, 'map2');
  t.access(base, 3 * t.G, RW, 'setAccessAcrossHole');
  t.getAccess(base, 'getAccess1');
  t.getAccess(base + 2n * t.g, 'getAccess2');
});
def('setAccess.rangeEndingInUnmapped', (t) => {
  const base = t.reserve(2 * t.G);
  const h = t.create(t.G);
  if (!base || !h) return;
  t.map(base, t.G, h);
  t.access(base, 2 * t.G, RW, 'setAccessPastMapping');
  t.getAccess(base);
});
def('setAccess.beforeMap', (t) => {
  const base = t.reserve(t.G);
  if (base) t.access(base, t.G, RW, 'setAccessUnmapped');
});
def('setAccess.unreservedAddress', (t) => {
  const p = t.unreserved(t.G);
  t.access(p, t.G, RW, 'setAccessUnreserved');
});
def('setAccess.sizeZero', (t) => {
  const { base, h } = t.mapped(t.G, null);
  if (!base || !h) return;
  t.access(base, 0, RW, 'size0');
  t.getAccess(base);
});

// ---------------------------------------------------------------- getAccess

def('getAccess.afterMapBeforeSetAccess', (t) => {
  const { base, h } = t.mapped(t.G, null);
  if (base && h) t.getAccess(base);
});
def('getAccess.otherDevice', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  t.getAccess(base, 'idCount', t.env.deviceCount);
  t.getAccess(base, 'idNegative', -1);
});
def('getAccess.hostLocation', (t) => {
  const { base, h } = t.mapped(t.G);
  if (base && h) t.getAccess(base, 'host', 0, CU_MEM_LOCATION_TYPE_HOST);
});
def('getAccess.reservedUnmapped', (t) => {
  const base = t.reserve(t.G);
  if (base) t.getAccess(base);
});
def('getAccess.unreserved', (t) => void t.getAccess(t.unreserved(t.G)));
def('getAccess.midMapping', (t) => {
  const { base, h } = t.mapped(2 * t.G, READ);
  if (!base || !h) return;
  t.getAccess(base + t.g + 12345n, 'midSecondGranule');
  t.getAccess(base + 2n * t.g - 1n, 'lastByte');
  t.getAccess(base + 2n * t.g, 'oneBytePastEnd');
});
def('getAccess.cuMemAllocPointer', (t) => {
  const box = { value: 0n };
  if (t.call('cuMemAlloc', t.cu.cuMemAlloc(box, t.G)) !== 0) return;
  t.getAccess(box.value);
  t.call('cuMemFree', t.cu.cuMemFree(box.value));
});

// ---------------------------------------------------------------- copies through a mapping

const copyNoAccess = (t: Trace, body: (base: bigint) => void): void => {
  const { base, h } = t.mapped(t.G, null);
  if (!base || !h) return;
  body(base);
  t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
};
def('copy.noAccess.HtoD', (t) => copyNoAccess(t, (b) => void t.write(b, pattern(16, 13))), true);
def('copy.noAccess.DtoH', (t) => copyNoAccess(t, (b) => void t.read(b, 16)), true);
def(
  'copy.noAccess.DtoDFromRw',
  (t) => {
    const src = t.mapped(t.G);
    copyNoAccess(t, (b) => void t.call('DtoD', t.cu.cuMemcpyDtoD(b, src.base, 16)));
  },
  true,
);
def(
  'copy.noAccess.memsetD8',
  (t) => copyNoAccess(t, (b) => void t.call('memsetD8', t.cu.cuMemsetD8(b, 7, 16))),
  true,
);
def(
  'copy.noAccess.HtoDAsync',
  (t) => {
    const s = t.stream();
    copyNoAccess(t, (b) => {
      t.call('HtoDAsync', t.cu.cuMemcpyHtoDAsync(b, pattern(16, 14), 16, s));
      t.call('streamSync', t.cu.cuStreamSynchronize(s));
    });
  },
  true,
);
def(
  'copy.noAccess.memsetD8Async',
  (t) => {
    const s = t.stream();
    copyNoAccess(t, (b) => {
      t.call('memsetD8Async', t.cu.cuMemsetD8Async(b, 9, 16, s));
      t.call('streamSync', t.cu.cuStreamSynchronize(s));
    });
  },
  true,
);
def(
  'copy.explicitNone.HtoD',
  (t) => {
    const { base, h } = t.mapped(t.G, NONE);
    if (!base || !h) return;
    t.write(base, pattern(16, 15));
    t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
  },
  true,
);
def(
  'copy.readOnly.HtoD',
  (t) => {
    const { base, h } = t.mapped(t.G, READ);
    if (!base || !h) return;
    t.write(base, pattern(16, 16), 'HtoDToReadOnly');
    t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
  },
  true,
);
def('copy.readOnly.DtoH', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  const data = pattern(16, 17);
  t.write(base, data);
  t.access(base, t.G, READ, 'downgrade');
  t.readEquals(base, data, 'DtoHFromReadOnly');
});
def(
  'copy.readOnly.memsetD8',
  (t) => {
    const { base, h } = t.mapped(t.G, READ);
    if (!base || !h) return;
    t.call('memsetReadOnly', t.cu.cuMemsetD8(base, 1, 16));
    t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
  },
  true,
);
def('copy.readOnly.DtoDFromReadOnly', (t) => {
  const src = t.mapped(t.G);
  const dst = t.mapped(t.G);
  if (!src.base || !dst.base) return;
  const data = pattern(32, 18);
  t.write(src.base, data, 'fill');
  t.access(src.base, t.G, READ, 'srcToRead');
  t.call('DtoD', t.cu.cuMemcpyDtoD(dst.base, src.base, 32));
  t.readEquals(dst.base, data, 'readDst');
});
def(
  'copy.readOnly.DtoDIntoReadOnly',
  (t) => {
    const src = t.mapped(t.G);
    const dst = t.mapped(t.G, READ);
    if (!src.base || !dst.base) return;
    t.call('DtoD', t.cu.cuMemcpyDtoD(dst.base, src.base, 32));
    t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
  },
  true,
);
def('copy.readWrite.roundTrip', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  const data = pattern(256, 19);
  t.write(base + 1000n, data);
  t.readEquals(base + 1000n, data);
  t.call('DtoD', t.cu.cuMemcpyDtoD(base + 4096n, base + 1000n, 256));
  t.readEquals(base + 4096n, data, 'readDtoDCopy');
  t.call('memsetD8', t.cu.cuMemsetD8(base + 1010n, 0x5a, 4));
  t.read(base + 1008n, 8, 'readAroundMemset');
});
def('copy.readWrite.wholeGranule', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  t.call('memsetWhole', t.cu.cuMemsetD8(base, 0x11, t.G));
  t.read(base + t.g - 8n, 8, 'readLast8');
  const big = new Uint8Array(t.G);
  const code = t.cu.cuMemcpyDtoH(big, base, t.G);
  t.call('readWhole', code, code === 0 ? big.every((b) => b === 0x11) : undefined);
});
def('copy.async.roundTrip', (t) => {
  const { base, h } = t.mapped(t.G);
  const s = t.stream();
  if (!base || !h || !s) return;
  const data = pattern(64, 20);
  t.call('HtoDAsync', t.cu.cuMemcpyHtoDAsync(base, data, 64, s));
  t.call('DtoDAsync', t.cu.cuMemcpyDtoDAsync(base + 8192n, base, 64, s));
  t.call('memsetD8Async', t.cu.cuMemsetD8Async(base + 8192n, 0xee, 2, s));
  const out = new Uint8Array(64);
  t.call('DtoHAsync', t.cu.cuMemcpyDtoHAsync(out, base + 8192n, 64, s));
  t.call('streamSync', t.cu.cuStreamSynchronize(s));
  t.see('readBack', hex(out));
});
def('copy.async.nullStream', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  const data = pattern(16, 21);
  t.call('HtoDAsyncStream0', t.cu.cuMemcpyHtoDAsync(base, data, 16, 0n));
  t.call('streamSync0', t.cu.cuStreamSynchronize(0n));
  t.readEquals(base, data);
});
def('copy.straddleTwoMappings', (t) => {
  const { base, h1, h2 } = t.twoAdjacent(t.G);
  if (!base || !h1 || !h2) return;
  const data = pattern(64, 22);
  const at = base + t.g - 32n;
  t.write(at, data, 'writeStraddle');
  t.readEquals(at, data, 'readStraddle');
  t.read(base + t.g - 4n, 8, 'readAroundBoundary');
  t.call('memsetStraddle', t.cu.cuMemsetD8(base + t.g - 2n, 0x77, 4));
  t.read(base + t.g - 4n, 8, 'readAfterMemset');
  t.call('DtoDStraddle', t.cu.cuMemcpyDtoD(base + 4096n, at, 64));
  const expected = data.slice();
  expected.fill(0x77, 30, 34);
  t.readEquals(base + 4096n, expected, 'readDtoDCopy');
});
def(
  'copy.straddleIntoReadOnly',
  (t) => {
    const { base, h1, h2 } = t.twoAdjacent(t.G);
    if (!base || !h1 || !h2) return;
    t.access(base + t.g, t.G, READ, 'secondToRead');
    t.write(base + t.g - 32n, pattern(64, 23), 'writeStraddle');
    t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
  },
  true,
);
def(
  'copy.pastEndIntoUnmapped.HtoD',
  (t) => {
    const base = t.reserve(2 * t.G);
    const h = t.create(t.G);
    if (!base || !h) return;
    t.map(base, t.G, h);
    t.access(base, t.G, RW);
    t.write(base + t.g - 32n, pattern(64, 24), 'writePastEnd');
    t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
  },
  true,
);
def(
  'copy.pastEndIntoUnmapped.DtoH',
  (t) => {
    const base = t.reserve(2 * t.G);
    const h = t.create(t.G);
    if (!base || !h) return;
    t.map(base, t.G, h);
    t.access(base, t.G, RW);
    t.read(base + t.g - 32n, 64, 'readPastEnd');
    t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
  },
  true,
);
def(
  'copy.pastEndIntoUnmapped.memsetD8',
  (t) => {
    const base = t.reserve(2 * t.G);
    const h = t.create(t.G);
    if (!base || !h) return;
    t.map(base, t.G, h);
    t.access(base, t.G, RW);
    t.call('memsetPastEnd', t.cu.cuMemsetD8(base + t.g - 32n, 3, 64));
    t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
  },
  true,
);
def(
  'copy.reservedUnmapped.HtoD',
  (t) => {
    const base = t.reserve(t.G);
    if (!base) return;
    t.write(base, pattern(16, 25), 'writeReservedUnmapped');
    t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
  },
  true,
);
def('copy.sizeZero', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  t.call('HtoD0', t.cu.cuMemcpyHtoD(base, new Uint8Array(1), 0));
  t.call('DtoH0', t.cu.cuMemcpyDtoH(new Uint8Array(1), base, 0));
  t.call('DtoD0', t.cu.cuMemcpyDtoD(base, base + 64n, 0));
  t.call('memset0', t.cu.cuMemsetD8(base, 1, 0));
});

// ---------------------------------------------------------------- unmap

def('unmap.exact', (t) => {
  const { base, h } = t.mapped(t.G);
  if (base && h) t.unmap(base, t.G);
});
def('unmap.partOfMapping', (t) => {
  const { base, h } = t.mapped(2 * t.G);
  if (!base || !h) return;
  const data = pattern(16, 26);
  t.write(base + t.g, data);
  t.unmap(base, t.G, 'unmapFirstHalf');
  t.getAccess(base, 'getAccessFirstHalf');
  t.getAccess(base + t.g, 'getAccessSecondHalf');
  t.readEquals(base + t.g, data, 'readSecondHalf');
  t.unmap(base + t.g, t.G, 'unmapSecondHalf');
});
def('unmap.twoAdjacentInOneCall', (t) => {
  const { base, h1, h2 } = t.twoAdjacent(t.G);
  if (!base || !h1 || !h2) return;
  if (t.unmap(base, 2 * t.G, 'unmapBoth') === 0) {
    // Both deferred unmaps are now stale.
    t.getAccess(base, 'getAccess1');
    t.getAccess(base + t.g, 'getAccess2');
    t.call('unmap1Again', t.cu.cuMemUnmap(base, t.G));
    t.call('unmap2Again', t.cu.cuMemUnmap(base + t.g, t.G));
  }
});
def('unmap.rangeWithHole', (t) => {
  const base = t.reserve(3 * t.G);
  const h1 = t.create(t.G, t.prop(), 0, 'create1');
  const h2 = t.create(t.G, t.prop(), 0, 'create2');
  if (!base || !h1 || !h2) return;
  t.map(base, t.G, h1, 'map1');
  t.map(base + 2n * t.g, t.G, h2, 'map2');
  if (t.unmap(base, 3 * t.G, 'unmapAcrossHole') === 0) {
    t.call('unmap1Again', t.cu.cuMemUnmap(base, t.G));
    t.call('unmap2Again', t.cu.cuMemUnmap(base + 2n * t.g, t.G));
  }
});
def('unmap.twice', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  t.unmap(base, t.G, 'unmap1');
  t.call('unmap2', t.cu.cuMemUnmap(base, t.G));
});
def('unmap.reservedUnmapped', (t) => {
  const base = t.reserve(t.G);
  if (base) t.call('unmap', t.cu.cuMemUnmap(base, t.G));
});
def('unmap.unreserved', (t) => void t.call('unmap', t.cu.cuMemUnmap(t.unreserved(t.G), t.G)));
def('unmap.startMidMapping', (t) => {
  const { base, h } = t.mapped(2 * t.G);
  if (!base || !h) return;
  t.unmap(base + t.g, t.G, 'unmapSecondHalf');
  t.getAccess(base, 'getAccessFirstHalf');
});
def('unmap.misaligned', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  t.call('unmapOffset4096', t.cu.cuMemUnmap(base + 4096n, t.G - 4096));
  t.call('unmapSize4096', t.cu.cuMemUnmap(base, 4096));
  t.getAccess(base);
});
def('unmap.sizeZero', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  t.call('unmap0', t.cu.cuMemUnmap(base, 0));
  t.getAccess(base);
});
def('unmap.sizeLargerThanMapping', (t) => {
  const base = t.reserve(2 * t.G);
  const h = t.create(t.G);
  if (!base || !h) return;
  t.map(base, t.G, h);
  t.call('unmap2G', t.cu.cuMemUnmap(base, 2 * t.G));
  t.getAccess(base);
});
def(
  'unmap.remapStartsWithNoAccess',
  (t) => {
    const { base, h } = t.mapped(t.G);
    if (!base || !h) return;
    t.write(base, pattern(16, 27));
    t.unmap(base, t.G);
    t.map(base, t.G, h, 'remap');
    t.getAccess(base, 'getAccessAfterRemap');
    t.write(base, pattern(16, 28), 'writeAfterRemap');
    t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
  },
  true,
);
def('unmap.dataSurvivesRemap', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  const data = pattern(32, 29);
  t.write(base + 777n, data);
  t.unmap(base, t.G);
  t.map(base, t.G, h, 'remap');
  t.access(base, t.G, RW, 'setAccessAfterRemap');
  t.readEquals(base + 777n, data, 'readAfterRemap');
});
def('unmap.pendingAsyncWork', (t) => {
  const { base, h } = t.mapped(t.G);
  const s = t.stream();
  if (!base || !h || !s) return;
  t.call('memsetAsync', t.cu.cuMemsetD8Async(base, 0x42, t.G, s));
  t.unmap(base, t.G, 'unmapWithPendingWork');
  t.call('streamSync', t.cu.cuStreamSynchronize(s));
  t.map(base, t.G, h, 'remap');
  t.access(base, t.G, RW);
  t.read(base + t.g - 4n, 4, 'readLastBytes');
});

// ---------------------------------------------------------------- retain

def('retain.fromBase', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  const r = t.retain(base);
  if (r) t.see('sameHandle', r === h);
});
def('retain.fromInterior', (t) => {
  const { base, h } = t.mapped(2 * t.G);
  if (!base || !h) return;
  const r1 = t.retain(base + 4096n, 'retainPlus4096');
  if (r1) t.see('sameHandle4096', r1 === h);
  const r2 = t.retain(base + t.g + 1n, 'retainSecondGranule');
  if (r2) t.see('sameHandleSecondGranule', r2 === h);
});
def('retain.reservedUnmapped', (t) => {
  const base = t.reserve(t.G);
  if (base) t.retain(base);
});
def('retain.unreserved', (t) => void t.retain(t.unreserved(t.G)));
def('retain.cuMemAllocPointer', (t) => {
  const box = { value: 0n };
  if (t.call('cuMemAlloc', t.cu.cuMemAlloc(box, t.G)) !== 0) return;
  t.retain(box.value);
  t.call('cuMemFree', t.cu.cuMemFree(box.value));
});
def('retain.refcount', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  const data = pattern(32, 30);
  t.write(base, data);
  const r = t.retain(base);
  if (!r) return;
  t.release(h, 'releaseOriginal');
  t.call('releaseRetained', t.cu.cuMemRelease(r));
  t.readEquals(base, data, 'readAfterBothReleases');
  t.unmap(base, t.G, 'unmap');
  t.call('releaseAfterUnmap', t.cu.cuMemRelease(h));
});
def('retain.aliasSecondRange', (t) => {
  const base = t.reserve(2 * t.G);
  const h = t.create(t.G);
  if (!base || !h) return;
  t.map(base, t.G, h, 'mapA');
  t.map(base + t.g, t.G, h, 'mapB');
  const r = t.retain(base + t.g, 'retainFromB');
  if (r) t.see('sameHandle', r === h);
});
def('retain.releasedButMapped', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  t.release(h);
  const r = t.retain(base, 'retainAfterRelease');
  if (r) t.see('sameHandle', r === h);
});

// ---------------------------------------------------------------- properties

def('properties.device', (t) => {
  const h = t.create(t.G);
  if (h) t.props(h);
});
def('properties.released', (t) => {
  const h = t.create(t.G);
  if (!h) return;
  t.release(h);
  t.props(h, 'propsOfReleased');
});
def('properties.bogus', (t) => {
  t.props(0n, 'props0');
  t.props(0xdeadbeefn, 'propsDeadbeef');
});
def('properties.retained', (t) => {
  const { base, h } = t.mapped(
    t.G,
    null,
    t.prop({ requestedHandleTypes: CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR }),
  );
  if (!base || !h) return;
  const r = t.retain(base);
  if (r) t.props(r, 'propsOfRetained');
});

// ---------------------------------------------------------------- export / import

const posixProp = (t: Trace) => t.prop({ requestedHandleTypes: CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR });

def('export.posixRequested', (t) => {
  const h = t.create(t.G, posixProp(t));
  if (h) t.exportFd(h);
});
def('export.notRequested', (t) => {
  const h = t.create(t.G);
  if (h) t.exportFd(h);
});
def('export.fabricNotRequested', (t) => {
  const h = t.create(t.G, posixProp(t));
  if (h) t.exportFd(h, 'exportFabric', CU_MEM_HANDLE_TYPE_FABRIC);
});
def('export.win32OnLinux', (t) => {
  const h = t.create(t.G, posixProp(t));
  if (h) t.exportFd(h, 'exportWin32', CU_MEM_HANDLE_TYPE_WIN32);
});
def('export.handleType0', (t) => {
  const h = t.create(t.G, posixProp(t));
  if (h) t.exportFd(h, 'exportNone', CU_MEM_HANDLE_TYPE_NONE);
});
def('export.flags1', (t) => {
  const h = t.create(t.G, posixProp(t));
  if (h) t.exportFd(h, 'exportFlags1', CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1);
});
def('export.twice', (t) => {
  const h = t.create(t.G, posixProp(t));
  if (!h) return;
  const a = t.exportFd(h, 'export1');
  const b = t.exportFd(h, 'export2');
  if (a >= 0 && b >= 0) t.see('distinctFds', a !== b);
});
def('export.released', (t) => {
  const h = t.create(t.G, posixProp(t));
  if (!h) return;
  t.release(h);
  t.exportFd(h, 'exportReleased');
});
def('export.retainedFromMapping', (t) => {
  const { base, h } = t.mapped(t.G, RW, posixProp(t));
  if (!base || !h) return;
  const r = t.retain(base);
  if (r) t.exportFd(r, 'exportRetained');
});
def('import.sameProcess', (t) => {
  const a = t.mapped(t.G, RW, posixProp(t));
  if (!a.base || !a.h) return;
  const data = pattern(64, 31);
  t.write(a.base + 64n, data, 'writeOriginal');
  const fd = t.exportFd(a.h);
  if (fd < 0) return;
  const h2 = t.importFd(fd);
  if (!h2) return;
  t.see('sameHandleValue', h2 === a.h);
  t.props(h2, 'propsOfImported');
  const base2 = t.reserve(t.G, 0, 0n, 0, 'reserve2');
  if (!base2) return;
  t.map(base2, t.G, h2, 'mapImported');
  t.access(base2, t.G, RW, 'setAccessImported');
  t.readEquals(base2 + 64n, data, 'readThroughImported');
  t.call('memsetThroughImported', t.cu.cuMemsetD8(base2, 0x99, 4));
  t.read(a.base, 4, 'readOriginalSeesImportedWrite');
});
def('import.twiceSameFd', (t) => {
  const h = t.create(t.G, posixProp(t));
  if (!h) return;
  const fd = t.exportFd(h);
  if (fd < 0) return;
  const a = t.importFd(fd, 'import1');
  const b = t.importFd(fd, 'import2');
  if (a && b) t.see('sameHandleValue', a === b);
});
def('import.thenReleaseOriginal', (t) => {
  const h = t.create(t.G, posixProp(t));
  if (!h) return;
  const fd = t.exportFd(h);
  if (fd < 0) return;
  const h2 = t.importFd(fd);
  if (!h2) return;
  t.release(h, 'releaseOriginal');
  const base = t.reserve(t.G);
  if (!base) return;
  t.map(base, t.G, h2, 'mapImported');
  t.access(base, t.G, RW);
  const data = pattern(16, 32);
  t.write(base, data);
  t.readEquals(base, data);
});
def('import.bogusFd', (t) => {
  t.importFd(987654, 'importUnopenedFd');
  t.importFd(-1, 'importMinus1');
});
def('import.handleTypeNone', (t) => {
  const h = t.create(t.G, posixProp(t));
  if (!h) return;
  const fd = t.exportFd(h);
  if (fd >= 0) t.importFd(fd, 'importTypeNone', CU_MEM_HANDLE_TYPE_NONE);
});

// ---------------------------------------------------------------- cuMemAlloc / cuMemFree

const alloc = (t: Trace, size: number | bigint, label = 'cuMemAlloc'): bigint => {
  const box = { value: 0n };
  const code = t.call(label, t.cu.cuMemAlloc(box, size));
  return code === 0 ? box.value : 0n;
};
def('alloc.size0', (t) => {
  const p = alloc(t, 0);
  if (p) t.call('cuMemFree', t.cu.cuMemFree(p));
});
def('alloc.roundTrip', (t) => {
  const p = alloc(t, 1000);
  if (!p) return;
  const data = pattern(1000, 33);
  t.write(p, data);
  t.readEquals(p, data);
  t.call('cuMemFree', t.cu.cuMemFree(p));
});
def('alloc.freeTwice', (t) => {
  const p = alloc(t, t.G);
  if (!p) return;
  t.call('free1', t.cu.cuMemFree(p));
  t.call('free2', t.cu.cuMemFree(p));
});
def('alloc.freeNull', (t) => void t.call('cuMemFree0', t.cu.cuMemFree(0n)));
def('alloc.freeInterior', (t) => {
  const p = alloc(t, t.G);
  if (!p) return;
  t.call('freeInterior', t.cu.cuMemFree(p + 4096n));
  t.call('cuMemFree', t.cu.cuMemFree(p));
});
def('alloc.freeVmmPointer', (t) => {
  const { base, h } = t.mapped(t.G);
  if (base && h) t.call('cuMemFreeOnVmm', t.cu.cuMemFree(base));
  if (base && h) t.getAccess(base, 'getAccessAfter');
});
def('alloc.freeReservedUnmapped', (t) => {
  const base = t.reserve(t.G);
  if (base) t.call('cuMemFreeOnReservation', t.cu.cuMemFree(base));
});
def('alloc.unmapOnAllocPointer', (t) => {
  const p = alloc(t, t.G);
  if (!p) return;
  t.call('cuMemUnmap', t.cu.cuMemUnmap(p, t.G));
  t.write(p, pattern(16, 34), 'writeAfterUnmapAttempt');
  t.call('cuMemFree', t.cu.cuMemFree(p));
});
def('alloc.addressFreeOnAllocPointer', (t) => {
  const p = alloc(t, t.G);
  if (!p) return;
  t.call('cuMemAddressFree', t.cu.cuMemAddressFree(p, t.G));
  t.call('cuMemFree', t.cu.cuMemFree(p));
});
def('alloc.mapOverAllocPointer', (t) => {
  const p = alloc(t, t.G);
  const h = t.create(t.G);
  if (!p || !h) return;
  const code = t.call('cuMemMap', t.cu.cuMemMap(p, t.G, 0, h, 0));
  if (code === 0) t.call('cuMemUnmap', t.cu.cuMemUnmap(p, t.G));
  t.call('cuMemFree', t.cu.cuMemFree(p));
});
def('alloc.setAccessOnAllocPointer', (t) => {
  const p = alloc(t, t.G);
  if (!p) return;
  t.access(p, t.G, READ, 'setAccessRead');
  t.call('cuMemFree', t.cu.cuMemFree(p));
});
def('alloc.outOfMemory', (t) => {
  const p = alloc(t, BigInt(Math.ceil((2 * t.env.totalMem) / t.G)) * t.g);
  if (p) t.call('cuMemFree', t.cu.cuMemFree(p));
});

// ---------------------------------------------------------------- memory info

const MiB = 1024 * 1024;
def('memInfo.createAndRelease', (t) => {
  const before = t.memInfo();
  const h = t.create(256 * t.G);
  const during = t.memInfo();
  if (h) t.release(h);
  const after = t.memInfo();
  if (!before || !during || !after) return t.see('memInfo', false);
  t.see('totalEqualsDeviceTotalMem', before.total === t.env.totalMem);
  t.see('dropMiBAtLeastSize', before.free - during.free >= 256 * t.G);
  t.see('dropMiBRounded', Math.round((before.free - during.free) / MiB));
  t.see('restoredAfterRelease', Math.abs(after.free - before.free) < 64 * MiB);
});
def('memInfo.reserveAndMapDoNotAllocate', (t) => {
  const before = t.memInfo();
  if (!t.reserve(512 * t.G)) return;
  const mid = t.memInfo();
  if (!before || !mid) return;
  t.see('reserveDropMiB', Math.round((before.free - mid.free) / MiB));
});

// ---------------------------------------------------------------- errors, devices, streams

def('errors.namesAndStrings', (t) =>
  t.errorTexts([0, 1, 2, 3, 100, 101, 200, 201, 400, 700, 801, 999, 12345]),
);
def('device.queries', (t) => {
  const c = { value: 0 };
  t.call('count', t.cu.cuDeviceGetCount(c), c.value);
  const d = { value: -1 };
  t.call('get0', t.cu.cuDeviceGet(d, 0), d.value);
  t.call('getOutOfRange', t.cu.cuDeviceGet(d, c.value));
  t.call('getNegative', t.cu.cuDeviceGet(d, -1));
  const m = { value: 0 };
  t.call('totalMemOutOfRange', t.cu.cuDeviceTotalMem(m, c.value));
  const ctx = { value: 0n };
  t.call('ctxGetCurrent', t.cu.cuCtxGetCurrent(ctx), ctx.value !== 0n);
});
def('stream.createSyncDestroy', (t) => {
  const s = t.stream();
  if (!s) return;
  t.call('sync', t.cu.cuStreamSynchronize(s));
  const nb = { value: 0n };
  const code = t.call('createNonBlocking', t.cu.cuStreamCreate(nb, 1));
  if (code === 0) t.call('destroyNonBlocking', t.cu.cuStreamDestroy(nb.value));
  t.call('createFlags2', t.cu.cuStreamCreate(nb, 2));
  if (nb.value && code !== 0) t.cu.cuStreamDestroy(nb.value);
});

// ---------------------------------------------------------------- second-round probes

def('unmap.thenCopy', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  t.unmap(base, t.G);
  t.write(base, pattern(16, 41), 'writeAfterUnmap');
  t.read(base, 16, 'readAfterUnmap');
  t.getAccess(base, 'getAccessAfterUnmap');
  t.call('ctxSynchronize', t.cu.cuCtxSynchronize());
});
def('unmap.misalignedInReservedUnmapped', (t) => {
  const base = t.reserve(2 * t.G);
  if (!base) return;
  t.call('unmapOffset4096', t.cu.cuMemUnmap(base + 4096n, t.G));
  t.call('unmapSize4096', t.cu.cuMemUnmap(base, 4096));
  t.call('unmapPastEnd', t.cu.cuMemUnmap(base + t.g, 2 * t.G));
});
def('unmap.secondOfTwoKeepsFirst', (t) => {
  const { base, h1, h2 } = t.twoAdjacent(t.G);
  if (!base || !h1 || !h2) return;
  const data = pattern(16, 42);
  t.write(base, data);
  t.unmap(base + t.g, t.G, 'unmapSecond');
  t.getAccess(base, 'getAccessFirst');
  t.readEquals(base, data, 'readFirst');
  t.getAccess(base + t.g, 'getAccessSecond');
});
def('setAccess.rangeStartingInHole', (t) => {
  const base = t.reserve(3 * t.G);
  const h = t.create(t.G);
  if (!base || !h) return;
  t.map(base + 2n * t.g, t.G, h);
  t.access(base + t.g, 2 * t.G, RW, 'setAccessFromHole');
  t.getAccess(base + 2n * t.g);
});
def('setAccess.holeInMiddleOfThree', (t) => {
  const base = t.reserve(4 * t.G);
  const hs = [0, 1, 3].map((i) => t.create(t.G, t.prop(), 0, `create${i}`));
  if (!base || hs.some((h) => !h)) return;
  t.map(base, t.G, hs[0]!, 'map0');
  t.map(base + t.g, t.G, hs[1]!, 'map1');
  t.map(base + 3n * t.g, t.G, hs[2]!, 'map3');
  t.access(base, 4 * t.G, RW, 'setAccessAll');
  t.getAccess(base, 'getAccess0');
  t.getAccess(base + t.g, 'getAccess1');
  t.getAccess(base + 3n * t.g, 'getAccess3');
});
def('setAccess.hostAllocationHostLocation', (t) => {
  const p = t.prop({ location: { type: CU_MEM_LOCATION_TYPE_HOST, id: 0 } });
  const { base, h } = t.mapped(t.G, null, p);
  if (!base || !h) return;
  t.setAccess(base, t.G, [t.desc(RW, 0, CU_MEM_LOCATION_TYPE_HOST)], 1, 'hostDesc');
  t.setAccess(base, t.G, [t.desc(RW, 0, CU_MEM_LOCATION_TYPE_HOST_NUMA)], 1, 'hostNumaDesc');
  t.getAccess(base, 'getAccessHost', 0, CU_MEM_LOCATION_TYPE_HOST);
  t.getAccess(base, 'getAccessDevice');
});
def('create.hostNumaCurrent', (t) => {
  const h = t.create(t.G, t.prop({ location: { type: CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, id: 0 } }));
  if (h) t.props(h);
});
def('create.hostNumaBadId', (t) => {
  void t.create(t.G, t.prop({ location: { type: CU_MEM_LOCATION_TYPE_HOST_NUMA, id: 9999 } }));
});
def('create.hostWithPosixFd', (t) => {
  const p = t.prop({
    location: { type: CU_MEM_LOCATION_TYPE_HOST, id: 0 },
    requestedHandleTypes: CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
  });
  const h = t.create(t.G, p);
  if (h) t.exportFd(h);
});
def('create.invalidBitsThenProperties', (t) => {
  const h = t.create(t.G, t.prop({ requestedHandleTypes: 0x41 }));
  if (!h) return;
  t.props(h);
  t.exportFd(h);
});
def('import.afterFdClosed', (t) => {
  const h = t.create(t.G, posixProp(t));
  if (!h || !t.env.closeFd) return;
  const box = { value: -1 };
  if (
    t.call(
      'export',
      t.cu.cuMemExportToShareableHandle(box, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
    ) !== 0
  )
    return;
  t.env.closeFd(box.value);
  t.importFd(box.value, 'importClosedFd');
});
def('import.mapWithOriginalAtOnce', (t) => {
  // The original and the imported handle mapped side by side in one reservation.
  const h = t.create(t.G, posixProp(t));
  if (!h) return;
  const fd = t.exportFd(h);
  const h2 = fd >= 0 ? t.importFd(fd) : 0n;
  const base = t.reserve(2 * t.G);
  if (!h2 || !base) return;
  t.map(base, t.G, h, 'mapOriginal');
  t.map(base + t.g, t.G, h2, 'mapImported');
  t.access(base, 2 * t.G, RW, 'setAccessBoth');
  t.call('memsetOriginal', t.cu.cuMemsetD8(base, 0x3c, 8));
  t.read(base + t.g, 8, 'readImported');
});
def('copy.fromCuMemAllocIntoMapping', (t) => {
  const { base, h } = t.mapped(t.G);
  const p = alloc(t, 4096);
  if (!base || !h || !p) return;
  const data = pattern(64, 43);
  t.write(p, data, 'writeAlloc');
  t.call('DtoDAllocToVmm', t.cu.cuMemcpyDtoD(base + 128n, p, 64));
  t.readEquals(base + 128n, data, 'readVmm');
  t.call('cuMemFree', t.cu.cuMemFree(p));
});
def('copy.overlappingDtoD', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  t.write(base, pattern(64, 44));
  t.call('DtoDSame', t.cu.cuMemcpyDtoD(base, base, 64));
  t.readEquals(base, pattern(64, 44), 'readSame');
});
def('copy.readOnlyDtoHAsync', (t) => {
  const { base, h } = t.mapped(t.G);
  const s = t.stream();
  if (!base || !h || !s) return;
  const data = pattern(16, 45);
  t.write(base, data);
  t.access(base, t.G, READ, 'downgrade');
  const out = new Uint8Array(16);
  t.call('DtoHAsync', t.cu.cuMemcpyDtoHAsync(out, base, 16, s));
  t.call('streamSync', t.cu.cuStreamSynchronize(s));
  t.see('equal', hex(out) === hex(data));
  t.call('memsetD8AsyncReadOnly', t.cu.cuMemsetD8Async(base, 1, 16, s));
  t.call('HtoDAsyncReadOnly', t.cu.cuMemcpyHtoDAsync(base, data, 16, s));
  t.call('DtoDAsyncReadOnly', t.cu.cuMemcpyDtoDAsync(base, base + 4096n, 16, s));
  t.call('streamSync2', t.cu.cuStreamSynchronize(s));
});
def('copy.noAccessAsyncDtoHAndDtoD', (t) => {
  const { base, h } = t.mapped(t.G, null);
  const s = t.stream();
  if (!base || !h || !s) return;
  t.call('DtoHAsync', t.cu.cuMemcpyDtoHAsync(new Uint8Array(16), base, 16, s));
  t.call('DtoDAsync', t.cu.cuMemcpyDtoDAsync(base, base + 4096n, 16, s));
  t.call('streamSync', t.cu.cuStreamSynchronize(s));
});
def('retain.thenReleaseTwiceMore', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  const r = t.retain(base);
  if (!r) return;
  t.call('release1', t.cu.cuMemRelease(h));
  t.call('release2', t.cu.cuMemRelease(h));
  t.getAccess(base, 'getAccessAfterTwoReleases');
  t.unmap(base, t.G, 'unmap');
});
def('reserve.hintInsideTakenRange', (t) => {
  const a = t.reserve(4 * t.G);
  if (!a) return;
  const b = t.reserve(t.G, 0, a + t.g, 0, 'reserveInsideA');
  if (b) t.see('gotHint', b === a + t.g);
});
def('reserve.hintWithAlignment', (t) => {
  const probe = t.unreserved(8 * t.G);
  const p = t.reserve(t.G, 4n * t.g, probe + t.g);
  if (p) t.see('gotHint', p === probe + t.g);
});

def('release.twiceWhileMapped', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  const data = pattern(16, 46);
  t.write(base, data);
  t.release(h, 'release1');
  t.call('release2WhileMapped', t.cu.cuMemRelease(h));
  t.readEquals(base, data, 'readAfterTwoReleases');
  t.unmap(base, t.G, 'unmap');
});
def('unmap.lastMappingOfReleasedHandleThenRemap', (t) => {
  const base = t.reserve(2 * t.G);
  const h = t.create(t.G);
  if (!base || !h) return;
  t.map(base, t.G, h, 'mapA');
  t.map(base + t.g, t.G, h, 'mapB');
  t.release(h);
  t.unmap(base, t.G, 'unmapA');
  t.getAccess(base + t.g, 'getAccessBStillMapped');
  t.unmap(base + t.g, t.G, 'unmapBLast');
});

// ---------------------------------------------------------------- growth (expandable segment)

def('grow.inPlaceFourChunks', (t) => {
  const base = t.reserve(8 * t.G);
  if (!base) return;
  for (let i = 0; i < 4; i++) {
    const at = base + BigInt(i) * t.g;
    const h = t.create(t.G, t.prop(), 0, `create${i}`);
    if (!h) return;
    t.map(at, t.G, h, `map${i}`);
    t.access(at, t.G, RW, `setAccess${i}`);
    t.call(`memset${i}`, t.cu.cuMemsetD8(at, 0x10 + i, t.G));
    t.release(h, `releaseEarly${i}`);
  }
  const probe = new Uint8Array(4);
  let ok = true;
  for (let i = 0; i < 4; i++) {
    const code = t.cu.cuMemcpyDtoH(probe, base + BigInt(i) * t.g + 5n, 4);
    ok &&= code === 0 && probe.every((b) => b === 0x10 + i);
  }
  t.see('eachChunkKeepsItsBytes', ok);
  t.call('unmapAllAtOnce', t.cu.cuMemUnmap(base, 4 * t.G));
});

// ---------------------------------------------------------------- calls of ported programs (issue 10)
//
// Note [Ported-call cases]: the device, pointer, peer, set, host-memory and
// capture calls that ported VMM programs reach for, each with its error
// paths. Values that differ between machines are recorded relative to
// something the case made: addresses as offsets from a base, contexts as
// "the current one", ids as "nonzero". Each case that changes per-thread
// driver state (the capture mode) puts it back.

/** CUpointer_attribute numbers (cuda.h) beyond the ones the CUDA flavour names. */
const PTR = {
  CONTEXT: 1,
  MEMORY_TYPE: 2,
  DEVICE_POINTER: 3,
  HOST_POINTER: 4,
  SYNC_MEMOPS: 6,
  BUFFER_ID: 7,
  IS_MANAGED: 8,
  DEVICE_ORDINAL: 9,
  IS_LEGACY_CUDA_IPC_CAPABLE: 10,
  RANGE_START_ADDR: 11,
  RANGE_SIZE: 12,
  MAPPED: 13,
  ALLOWED_HANDLE_TYPES: 14,
  IS_GPU_DIRECT_RDMA_CAPABLE: 15,
  ACCESS_FLAGS: 16,
  MEMPOOL_HANDLE: 17,
  MAPPING_SIZE: 18,
  MAPPING_BASE_ADDR: 19,
  MEMORY_BLOCK_ID: 20,
} as const;
/** The eight pointer attributes VMM programs read (the ones the CUDA flavour answers). */
const COMMON_POINTER_ATTRIBUTES = [
  PTR.CONTEXT,
  PTR.MEMORY_TYPE,
  PTR.DEVICE_POINTER,
  PTR.IS_MANAGED,
  PTR.DEVICE_ORDINAL,
  PTR.RANGE_START_ADDR,
  PTR.RANGE_SIZE,
  PTR.MAPPED,
];
/** Addresses among the attributes: recorded as offsets from the case's base. */
const ADDRESS_ATTRIBUTES: ReadonlySet<number> = new Set([
  PTR.DEVICE_POINTER,
  PTR.HOST_POINTER,
  PTR.RANGE_START_ADDR,
  PTR.MAPPING_BASE_ADDR,
]);
/** Ids that differ from run to run: recorded as "nonzero". */
const ID_ATTRIBUTES: ReadonlySet<number> = new Set([PTR.BUFFER_ID, PTR.MEMPOOL_HANDLE, PTR.MEMORY_BLOCK_ID]);

const CU_STREAM_CAPTURE_MODE_GLOBAL = 0;
const CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
const CU_STREAM_CAPTURE_MODE_RELAXED = 2;
const CU_DEVICE_ATTRIBUTES_OF_VMM_PROGRAMS = {
  smCount: 16,
  computeMode: 20,
  major: 75,
  minor: 76,
  vmm: 102,
  posixFd: 103,
  win32: 104,
  win32Kmt: 105,
  compression: 107,
  rdmaWithVmm: 110,
  rdma: 116,
  fabric: 128,
} as const;

/** The current context, for recording a CONTEXT attribute as "current" or not. */
function currentContext(t: Trace): bigint {
  const c = { value: 0n };
  return t.cu.cuCtxGetCurrent(c) === 0 ? c.value : 0n;
}

/** A pointer attribute's value, machine-independent: offsets from `base`, the context as 'current'. */
function attributeJson(t: Trace, attribute: number, value: number | bigint, base: bigint): Json {
  if (attribute === PTR.CONTEXT)
    return value === 0n || value === 0 ? 0 : value === currentContext(t) ? 'current' : 'other';
  if (ADDRESS_ATTRIBUTES.has(attribute))
    return value === 0n || value === 0 ? 0 : Number(BigInt(value) - base);
  if (ID_ATTRIBUTES.has(attribute)) return value === 0n || value === 0 ? 0 : 'nonzero';
  return Number(value);
}

/** cuPointerGetAttribute of each attribute at `ptr`, recorded as `label.attribute`. */
function pointerAttributes(
  t: Trace,
  label: string,
  ptr: bigint,
  base: bigint,
  attributes: readonly number[],
): void {
  for (const a of attributes) {
    const box: Box<number | bigint> = { value: -1 };
    const code = t.cu.cuPointerGetAttribute(box, a, ptr);
    t.call(`${label}.${a}`, code, code === 0 ? attributeJson(t, a, box.value, base) : undefined);
  }
}

/** cuPointerGetAttributes of `attributes` at `ptr`, recorded as one step. */
function pointerAttributesAtOnce(
  t: Trace,
  label: string,
  ptr: bigint,
  base: bigint,
  attributes: readonly number[],
): void {
  const boxes: Box<number | bigint>[] = attributes.map(() => ({ value: -1 }));
  const code = t.cu.cuPointerGetAttributes(attributes.length, attributes, boxes, ptr);
  t.call(
    label,
    code,
    code === 0 ? attributes.map((a, i) => attributeJson(t, a, boxes[i]!.value, base)) : undefined,
  );
}

/**
 * cuMemGetAddressRange at `ptr`: base as an offset from `base` ('NULL' for a
 * NULL base, 'unwritten' when the driver left the box as it was: the raw
 * binding keeps an unwritten out-parameter, Note [Unsigned reads]), and the size.
 */
function addressRange(t: Trace, label: string, ptr: bigint, base: bigint): void {
  const b = { value: -1n };
  const s = { value: -1 };
  const code = t.cu.cuMemGetAddressRange(b, s, ptr);
  t.call(label, code, code === 0 ? { base: addressOffset(b.value, -1n, base), size: s.value } : undefined);
}

/** An address the driver wrote, as an offset from `base`; 'NULL', or 'unwritten' if it is still `initial`. */
function addressOffset(value: bigint, initial: bigint, base: bigint): Json {
  if (value === initial) return 'unwritten';
  return value === 0n ? 'NULL' : Number(value - base);
}

/** cuMemAlloc of `size` bytes, freed at the end of the case (0n on failure). */
function allocated(t: Trace, size: number): bigint {
  const box = { value: 0n };
  if (t.call('cuMemAlloc', t.cu.cuMemAlloc(box, size)) !== 0) return 0n;
  const ptr = box.value;
  t.later('cuMemFree', () => t.cu.cuMemFree(ptr));
  return ptr;
}

/** One capture-mode exchange: the mode given, and the one that comes back. */
function exchangeMode(t: Trace, label: string, mode: number): number {
  const box = { value: mode };
  const code = t.cu.cuThreadExchangeStreamCaptureMode(box);
  t.call(label, code, code === 0 ? box.value : undefined);
  return code;
}

// Issue 17, item 2 (Note [Unsigned reads] in src/backends/cuda/driver.ts): each kind of 64-bit value
// the binding reads back, as what it must equal and whether it came back unsigned (a bigint or a
// number, never negative).
const unsigned = (v: unknown): boolean => (typeof v === 'bigint' || typeof v === 'number') && v >= 0;
function sameUnsigned(t: Trace, label: string, value: unknown, expected: unknown): void {
  t.see(label, { unsigned: unsigned(value), same: value === expected });
}
def('unsigned.deviceptrReads', (t) => {
  const { base, h } = t.mapped(3 * t.G);
  if (!base || !h) return;
  sameUnsigned(t, 'reserveIsMappedBase', base, base);
  const b = { value: -1n };
  const code = t.cu.cuMemGetAddressRange(b, null, base + 64n);
  t.call(
    'addressRangeBase',
    code,
    code === 0 ? { unsigned: unsigned(b.value), same: b.value === base } : undefined,
  );
  for (const [label, a] of [
    ['rangeStart', PTR.RANGE_START_ADDR],
    ['devicePointer', PTR.DEVICE_POINTER],
    ['mappingBase', PTR.MAPPING_BASE_ADDR],
  ] as const) {
    const box: Box<number | bigint> = { value: -1 };
    const c = t.cu.cuPointerGetAttribute(box, a, base);
    t.call(label, c, c === 0 ? { unsigned: unsigned(box.value), same: box.value === base } : undefined);
  }
  const p = allocated(t, t.G + 1);
  if (!p) return;
  const r = { value: -1n };
  const rc = t.cu.cuMemGetAddressRange(r, null, p + 1n);
  t.call('allocRangeBase', rc, rc === 0 ? { unsigned: unsigned(r.value), same: r.value === p } : undefined);
});
def('unsigned.sizeReads', (t) => {
  const total = { value: -1 };
  t.call('totalMem', t.cu.cuDeviceTotalMem(total, t.env.dev));
  sameUnsigned(t, 'totalMemIsEnv', total.value, t.env.totalMem);
  const free = { value: -1 };
  const all = { value: -1 };
  t.call('memGetInfo', t.cu.cuMemGetInfo(free, all));
  sameUnsigned(t, 'infoTotalIsTotalMem', all.value, total.value);
  t.see('infoFreeBelowTotal', unsigned(free.value) && free.value <= all.value);
  const gran = { value: -1 };
  t.call('granularity', t.cu.cuMemGetAllocationGranularity(gran, t.prop(), CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  sameUnsigned(t, 'granularityIsEnv', gran.value, t.G);
  const { base, h } = t.mapped(3 * t.G);
  if (!base || !h) return;
  const s = { value: -1 };
  const code = t.cu.cuMemGetAddressRange(null, s, base + 8n);
  t.call(
    'addressRangeSize',
    code,
    code === 0 ? { unsigned: unsigned(s.value), same: s.value === 3 * t.G } : undefined,
  );
  const box: Box<number | bigint> = { value: -1 };
  const c = t.cu.cuPointerGetAttribute(box, PTR.RANGE_SIZE, base);
  t.call(
    'rangeSize',
    c,
    c === 0 ? { unsigned: unsigned(box.value), same: box.value === 3 * t.G } : undefined,
  );
});
def('unsigned.handleReads', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  t.see('createdHandleUnsigned', unsigned(h));
  const r = { value: -1n };
  const code = t.cu.cuMemRetainAllocationHandle(r, base);
  t.call('retain', code, code === 0 ? { unsigned: unsigned(r.value), same: r.value === h } : undefined);
  if (code === 0) t.call('releaseRetained', t.cu.cuMemRelease(r.value));
  const ctx = { value: -1n };
  t.call('ctxGetCurrent', t.cu.cuCtxGetCurrent(ctx));
  t.see('contextUnsigned', unsigned(ctx.value) && ctx.value !== 0n);
  const s = t.stream();
  t.see('streamUnsigned', unsigned(s) && s !== 0n);
  const e = eventOf(t, CU_EVENT_DISABLE_TIMING);
  t.see('eventUnsigned', unsigned(e) && e !== 0n);
  if (e) t.call('eventDestroy', t.cu.cuEventDestroy(e));
});

// Device queries.
def('attribute.ofVmmPrograms', (t) => {
  for (const [name, a] of Object.entries(CU_DEVICE_ATTRIBUTES_OF_VMM_PROGRAMS)) {
    const box = { value: -1 };
    const code = t.cu.cuDeviceGetAttribute(box, a, t.env.dev);
    t.call(name, code, code === 0 ? box.value : undefined);
  }
});
def('attribute.badNumbers', (t) => {
  for (const a of [0, -1, 144, 1000]) {
    const box = { value: -1 };
    const code = t.cu.cuDeviceGetAttribute(box, a, t.env.dev);
    t.call(`attribute${a}`, code, code === 0 ? box.value : undefined);
  }
});
def('attribute.badDevice', (t) => {
  t.call('deviceCount', t.cu.cuDeviceGetAttribute({ value: -1 }, 16, t.env.deviceCount));
  t.call('deviceNegative', t.cu.cuDeviceGetAttribute({ value: -1 }, 16, -1));
  t.call('badDeviceAndAttribute', t.cu.cuDeviceGetAttribute({ value: -1 }, 0, t.env.deviceCount));
});
def('attribute.nullBox', (t) => void t.call('null', t.cu.cuDeviceGetAttribute(null, 16, t.env.dev)));
def('device.getAndCount', (t) => {
  const d = { value: -1 };
  t.call('get0', t.cu.cuDeviceGet(d, t.env.dev), d.value);
  t.call('getLarge', t.cu.cuDeviceGet({ value: -1 }, 1000));
});

// Stream capture: nothing captures.
def('capture.isCapturing', (t) => {
  const s = t.stream();
  for (const [name, h] of [
    ['null', 0n],
    ['legacy', 1n],
    ['perThread', 2n],
    ['created', s],
  ] as const) {
    const box = { value: -1 };
    const code = t.cu.cuStreamIsCapturing(h, box);
    t.call(name, code, code === 0 ? box.value : undefined);
  }
});
def('capture.isCapturingNullBox', (t) => void t.call('null', t.cu.cuStreamIsCapturing(0n, null)));
def('capture.isCapturingDestroyedStream', (t) => {
  const box = { value: 0n };
  if (t.call('create', t.cu.cuStreamCreate(box, 0)) !== 0) return;
  t.call('destroy', t.cu.cuStreamDestroy(box.value));
  t.call('isCapturing', t.cu.cuStreamIsCapturing(box.value, { value: -1 }));
});
def('capture.exchangeModeRoundTrip', (t) => {
  exchangeMode(t, 'toRelaxed', CU_STREAM_CAPTURE_MODE_RELAXED);
  exchangeMode(t, 'toThreadLocal', CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  exchangeMode(t, 'backToGlobal', CU_STREAM_CAPTURE_MODE_GLOBAL);
  exchangeMode(t, 'globalAgain', CU_STREAM_CAPTURE_MODE_GLOBAL);
});
def('capture.exchangeModeBadValues', (t) => {
  for (const mode of [3, -1, 99]) exchangeMode(t, `mode${mode}`, mode);
  exchangeMode(t, 'modeAfter', CU_STREAM_CAPTURE_MODE_GLOBAL);
});
def('capture.exchangeModeNullBox', (t) => {
  t.call('null', t.cu.cuThreadExchangeStreamCaptureMode(null));
  exchangeMode(t, 'modeAfter', CU_STREAM_CAPTURE_MODE_GLOBAL);
});

// Address ranges.
def('addressRange.cuMemAlloc', (t) => {
  const n = (1 << 20) + 1;
  const p = allocated(t, n);
  if (!p) return;
  addressRange(t, 'start', p, p);
  addressRange(t, 'interior', p + 4096n, p);
  addressRange(t, 'lastByte', p + BigInt(n - 1), p);
});
def('addressRange.vmmTwoMappings', (t) => {
  const { base } = t.twoAdjacent(t.G);
  if (!base) return;
  addressRange(t, 'first', base, base);
  addressRange(t, 'secondInterior', base + t.g + 5n, base);
  addressRange(t, 'lastByte', base + 2n * t.g - 1n, base);
});
def('addressRange.vmmNoAccess', (t) => {
  const { base, h } = t.mapped(t.G, null);
  if (base && h) addressRange(t, 'interior', base + 64n, base);
});
def('addressRange.vmmReservedUnmapped', (t) => {
  const base = t.reserve(2 * t.G);
  const h = t.create(t.G);
  if (!base || !h) return;
  t.map(base, t.G, h);
  addressRange(t, 'unmappedHalf', base + t.g + 1n, base);
  addressRange(t, 'mappedHalf', base + 1n, base);
});
def('addressRange.unreservedAndNull', (t) => {
  const p = t.unreserved(t.G);
  addressRange(t, 'unreserved', p, p);
  addressRange(t, 'null', 0n, 0n);
});
def('addressRange.freedAndUnmapped', (t) => {
  const box = { value: 0n };
  if (t.call('cuMemAlloc', t.cu.cuMemAlloc(box, t.G)) !== 0) return;
  t.call('cuMemFree', t.cu.cuMemFree(box.value));
  addressRange(t, 'freedAlloc', box.value, box.value);
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  t.unmap(base, t.G);
  addressRange(t, 'unmapped', base, base);
});
def('addressRange.nullBoxes', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  const b = { value: -1n };
  const s = { value: -1 };
  const c1 = t.cu.cuMemGetAddressRange(null, s, base + 8n);
  t.call('nullBase', c1, c1 === 0 ? s.value : undefined);
  const c2 = t.cu.cuMemGetAddressRange(b, null, base + 8n);
  t.call('nullSize', c2, c2 === 0 ? Number(b.value - base) : undefined);
  t.call('bothNull', t.cu.cuMemGetAddressRange(null, null, base + 8n));
});

// Pointer attributes: what the driver answers for cuMemAlloc memory and for VMM memory.
def('pointer.cuMemAlloc', (t) => {
  const p = allocated(t, t.G);
  if (!p) return;
  pointerAttributes(t, 'start', p, p, COMMON_POINTER_ATTRIBUTES);
  pointerAttributes(t, 'interior', p + 4096n, p, COMMON_POINTER_ATTRIBUTES);
});
def('pointer.vmm', (t) => {
  const { base } = t.twoAdjacent(t.G);
  if (!base) return;
  pointerAttributes(t, 'first', base, base, COMMON_POINTER_ATTRIBUTES);
  pointerAttributes(t, 'secondInterior', base + t.g + 4096n, base, COMMON_POINTER_ATTRIBUTES);
});
def('pointer.vmmNoAccess', (t) => {
  const { base, h } = t.mapped(t.G, null);
  if (base && h) pointerAttributes(t, 'interior', base + 64n, base, COMMON_POINTER_ATTRIBUTES);
});
def('pointer.vmmReservedUnmappedAndUnreserved', (t) => {
  const base = t.reserve(t.G);
  if (base) pointerAttributes(t, 'reserved', base, base, [PTR.MEMORY_TYPE, PTR.RANGE_SIZE]);
  const p = t.unreserved(t.G);
  pointerAttributes(t, 'unreserved', p, p, [PTR.MEMORY_TYPE, PTR.RANGE_SIZE]);
  pointerAttributes(t, 'null', 0n, 0n, [PTR.MEMORY_TYPE]);
});
def('pointer.rangeOfPartlyMappedReservation', (t) => {
  const base = t.reserve(4 * t.G);
  const h = t.create(t.G);
  if (!base || !h) return;
  t.map(base + t.g, t.G, h);
  t.access(base + t.g, t.G, RW);
  pointerAttributes(t, 'mapped', base + t.g + 8n, base, [
    PTR.RANGE_START_ADDR,
    PTR.RANGE_SIZE,
    PTR.MAPPING_BASE_ADDR,
    PTR.MAPPING_SIZE,
  ]);
  addressRange(t, 'range', base + t.g + 8n, base);
  t.unmap(base + t.g, t.G);
});
def('pointer.vmmHostNumaAndReadOnly', (t) => {
  const host = t.mapped(t.G, RW, t.prop({ location: { type: CU_MEM_LOCATION_TYPE_HOST_NUMA, id: 0 } }));
  if (host.base && host.h) {
    pointerAttributes(t, 'hostNuma', host.base + 8n, host.base, [
      PTR.CONTEXT,
      PTR.MEMORY_TYPE,
      PTR.DEVICE_ORDINAL,
      PTR.RANGE_SIZE,
      PTR.ACCESS_FLAGS,
      PTR.MAPPED,
    ]);
    addressRange(t, 'hostNumaRange', host.base + 8n, host.base);
  }
  const ro = t.mapped(t.G, READ);
  if (ro.base && ro.h)
    pointerAttributes(t, 'readOnly', ro.base, ro.base, [PTR.ACCESS_FLAGS, PTR.DEVICE_POINTER]);
});
def('pointer.freed', (t) => {
  const box = { value: 0n };
  if (t.call('cuMemAlloc', t.cu.cuMemAlloc(box, t.G)) !== 0) return;
  t.call('cuMemFree', t.cu.cuMemFree(box.value));
  pointerAttributes(t, 'freedAlloc', box.value, box.value, [PTR.MEMORY_TYPE, PTR.RANGE_SIZE]);
});
def('pointer.badAttributes', (t) => {
  const p = allocated(t, t.G);
  if (!p) return;
  for (const a of [0, -1, 99]) t.call(`attribute${a}`, t.cu.cuPointerGetAttribute({ value: -1 }, a, p));
  t.call('nullData', t.cu.cuPointerGetAttribute(null, PTR.MEMORY_TYPE, p));
});
/** The pointer attributes beyond the common ones, asked of VMM and of cuMemAlloc memory alike. */
const OTHER_POINTER_ATTRIBUTES = [
  PTR.HOST_POINTER,
  PTR.SYNC_MEMOPS,
  PTR.BUFFER_ID,
  PTR.IS_LEGACY_CUDA_IPC_CAPABLE,
  PTR.ALLOWED_HANDLE_TYPES,
  PTR.IS_GPU_DIRECT_RDMA_CAPABLE,
  PTR.ACCESS_FLAGS,
  PTR.MEMPOOL_HANDLE,
  PTR.MAPPING_SIZE,
  PTR.MAPPING_BASE_ADDR,
  PTR.MEMORY_BLOCK_ID,
];
def('pointer.otherAttributesOnVmm', (t) => {
  const { base, h } = t.mapped(
    t.G,
    RW,
    t.prop({ requestedHandleTypes: CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR }),
  );
  if (!base || !h) return;
  pointerAttributes(t, 'vmm', base + 64n, base, OTHER_POINTER_ATTRIBUTES);
});
def('pointer.otherAttributesOnCuMemAlloc', (t) => {
  const p = allocated(t, t.G);
  if (!p) return;
  pointerAttributes(t, 'alloc', p + 64n, p, OTHER_POINTER_ATTRIBUTES);
});
def('pointer.getAttributesAtOnce', (t) => {
  const p = allocated(t, t.G);
  const { base, h } = t.mapped(t.G);
  if (!p || !base || !h) return;
  pointerAttributesAtOnce(t, 'alloc', p + 8n, p, COMMON_POINTER_ATTRIBUTES);
  pointerAttributesAtOnce(t, 'vmm', base + 8n, base, COMMON_POINTER_ATTRIBUTES);
  const u = t.unreserved(t.G);
  pointerAttributesAtOnce(t, 'unreserved', u, u, COMMON_POINTER_ATTRIBUTES);
});
def('pointer.getAttributesBad', (t) => {
  const p = allocated(t, t.G);
  if (!p) return;
  t.call('zeroAttributes', t.cu.cuPointerGetAttributes(0, [PTR.MEMORY_TYPE], [{ value: -1 }], p));
  pointerAttributesAtOnce(t, 'badAttributeAmongGood', p, p, [PTR.MEMORY_TYPE, 99, PTR.RANGE_SIZE]);
  const kept = { value: -1 as number | bigint };
  const code = t.cu.cuPointerGetAttributes(
    2,
    [PTR.MEMORY_TYPE, PTR.RANGE_SIZE],
    [null as unknown as Box<number | bigint>, kept],
    p,
  );
  t.call('nullBoxAmongGood', code, code === 0 ? Number(kept.value) : undefined);
});

// Peers, on whatever devices the machine has (the H200 machine: one).
def('peer.canAccessSelfAndBadDevices', (t) => {
  const box = { value: -1 };
  t.call('self', t.cu.cuDeviceCanAccessPeer(box, t.env.dev, t.env.dev), box.value);
  t.call('peerOutOfRange', t.cu.cuDeviceCanAccessPeer({ value: -1 }, t.env.dev, t.env.deviceCount));
  t.call('deviceNegative', t.cu.cuDeviceCanAccessPeer({ value: -1 }, -1, t.env.dev));
  t.call('nullBox', t.cu.cuDeviceCanAccessPeer(null, t.env.dev, t.env.dev));
});
def('peer.enableAndDisableSelf', (t) => {
  const ctx = currentContext(t);
  t.call('enableSelf', t.cu.cuCtxEnablePeerAccess(ctx, 0));
  t.call('enableSelfFlags1', t.cu.cuCtxEnablePeerAccess(ctx, 1));
  t.call('disableSelf', t.cu.cuCtxDisablePeerAccess(ctx));
});
def('peer.enableNullContext', (t) => {
  t.call('enableNull', t.cu.cuCtxEnablePeerAccess(0n, 0));
  t.call('disableNull', t.cu.cuCtxDisablePeerAccess(0n));
});
def('peer.memcpyPeerSameContext', (t) => {
  const ctx = currentContext(t);
  const { base, h } = t.mapped(t.G);
  const p = allocated(t, t.G);
  if (!base || !h || !p) return;
  const data = pattern(256, 61);
  t.write(base, data);
  t.call('vmmToVmm', t.cu.cuMemcpyPeer(base + 4096n, ctx, base, ctx, 256));
  t.readEquals(base + 4096n, data, 'readVmm');
  t.call('vmmToAlloc', t.cu.cuMemcpyPeer(p, ctx, base, ctx, 256));
  t.readEquals(p, data, 'readAlloc');
  t.call('zeroBytes', t.cu.cuMemcpyPeer(p, ctx, base, ctx, 0));
});
def('peer.memcpyPeerNullContext', (t) => {
  const ctx = currentContext(t);
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  t.call('nullSource', t.cu.cuMemcpyPeer(base + 4096n, ctx, base, 0n, 16));
  t.call('nullDestination', t.cu.cuMemcpyPeer(base + 4096n, 0n, base, ctx, 16));
});
def(
  'peer.memcpyPeerReadOnlyDestination',
  (t) => {
    const ctx = currentContext(t);
    const { base, h1, h2 } = t.twoAdjacent(t.G);
    if (!base || !h1 || !h2) return;
    t.access(base + t.g, t.G, READ, 'secondReadOnly');
    t.call('intoReadOnly', t.cu.cuMemcpyPeer(base + t.g, ctx, base, ctx, 16));
  },
  true,
);

// Wide sets.
def('memset.d16AndD32Values', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  t.call('clear', t.cu.cuMemsetD8(base, 0, 64));
  t.call('d16', t.cu.cuMemsetD16(base, 0xabcd, 5));
  t.read(base, 12, 'readD16');
  t.call('d32', t.cu.cuMemsetD32(base + 32n, 0xdeadbeef, 3));
  t.read(base + 32n, 16, 'readD32');
});
def('memset.d16ValueWiderThan16Bits', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  t.call('d16Wide', t.cu.cuMemsetD16(base, 0x12345, 1));
  t.read(base, 4, 'readD16Wide');
});
def('memset.alignment', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  t.call('d16Odd', t.cu.cuMemsetD16(base + 1n, 1, 4));
  t.call('d32Odd', t.cu.cuMemsetD32(base + 1n, 1, 4));
  t.call('d32Plus2', t.cu.cuMemsetD32(base + 2n, 1, 4));
  t.call('d32Plus4', t.cu.cuMemsetD32(base + 4n, 1, 4));
  t.call('d16ZeroCountOdd', t.cu.cuMemsetD16(base + 1n, 1, 0));
  t.call('d32ZeroCountOdd', t.cu.cuMemsetD32(base + 2n, 1, 0));
});
def('memset.wideReadOnlyAndAlloc', (t) => {
  const { base, h } = t.mapped(t.G, READ);
  const p = allocated(t, t.G);
  if (!base || !h || !p) return;
  t.call('d32ReadOnly', t.cu.cuMemsetD32(base, 7, 4));
  t.call('d16ReadOnly', t.cu.cuMemsetD16(base, 7, 4));
  t.call('d32Alloc', t.cu.cuMemsetD32(p, 0x01020304, 2));
  t.read(p, 8, 'readAlloc');
});
def(
  'memset.wideNoAccess',
  (t) => {
    const { base, h } = t.mapped(t.G, null);
    if (!base || !h) return;
    t.call('d32NoAccess', t.cu.cuMemsetD32(base, 7, 4));
  },
  true,
);
def(
  'memset.wideUnreserved',
  (t) => {
    const p = t.unreserved(t.G);
    t.call('d32Unreserved', t.cu.cuMemsetD32(p, 7, 4));
    t.call('d16Null', t.cu.cuMemsetD16(0n, 7, 4));
  },
  true,
);

// Page-locked host memory.
def('host.allocCopyFree', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  const box: Box<Uint8Array | null> = { value: null };
  if (t.call('allocHost', t.cu.cuMemAllocHost(box, 4096), box.value?.length ?? null) !== 0 || !box.value)
    return;
  const host = box.value;
  host.set(pattern(4096, 62));
  t.call('HtoDFromHost', t.cu.cuMemcpyHtoD(base, host, 4096));
  host.fill(0);
  t.call('DtoHIntoHost', t.cu.cuMemcpyDtoH(host, base, 4096));
  t.see('roundTrip', hex(host) === hex(pattern(4096, 62)));
  const s = t.stream();
  if (s) {
    t.call('HtoDAsyncFromHost', t.cu.cuMemcpyHtoDAsync(base + 8192n, host, 4096, s));
    t.call('streamSync', t.cu.cuStreamSynchronize(s));
    t.readEquals(base + 8192n, pattern(4096, 62), 'readAsync');
  }
  t.call('freeHost', t.cu.cuMemFreeHost(host));
});
def('host.allocSize0AndNullBox', (t) => {
  const box: Box<Uint8Array | null> = { value: null };
  const code = t.call('size0', t.cu.cuMemAllocHost(box, 0));
  if (code === 0 && box.value) t.call('freeSize0', t.cu.cuMemFreeHost(box.value));
  t.call('nullBox', t.cu.cuMemAllocHost(null, 4096));
});
def('host.freeTwice', (t) => {
  const box: Box<Uint8Array | null> = { value: null };
  if (t.call('allocHost', t.cu.cuMemAllocHost(box, 4096)) !== 0 || !box.value) return;
  t.call('free1', t.cu.cuMemFreeHost(box.value));
  t.call('free2', t.cu.cuMemFreeHost(box.value));
});
def('host.freeNotHostMemory', (t) => {
  const box: Box<Uint8Array | null> = { value: null };
  if (t.call('allocHost', t.cu.cuMemAllocHost(box, 8192)) !== 0 || !box.value) return;
  t.call('freeInterior', t.cu.cuMemFreeHost(box.value.subarray(4096)));
  t.call('freePageable', t.cu.cuMemFreeHost(new Uint8Array(4096)));
  t.call('freeWhole', t.cu.cuMemFreeHost(box.value));
});

// Issue 17, item 1: cuMemHostAlloc's flags and cuMemHostGetFlags; cuMemcpy with the direction from the pointers.
def('host.hostAllocFlags', (t) => {
  for (const [label, flags] of [
    ['default', 0],
    ['portable', 1],
    ['devicemap', 2],
    ['writecombined', 4],
    ['all', 7],
    ['unknownBit8', 8],
  ] as const) {
    const box: Box<Uint8Array | null> = { value: null };
    if (t.call(label, t.cu.cuMemHostAlloc(box, 4096, flags), box.value?.length ?? null) !== 0 || !box.value)
      continue;
    const f = { value: -1 };
    const code = t.cu.cuMemHostGetFlags(f, box.value);
    t.call(`${label}:getFlags`, code, code === 0 ? f.value : undefined);
    t.call(`${label}:free`, t.cu.cuMemFreeHost(box.value));
    t.call(`${label}:getFlagsFreed`, t.cu.cuMemHostGetFlags(f, box.value));
  }
  const plain: Box<Uint8Array | null> = { value: null };
  if (t.call('allocHost', t.cu.cuMemAllocHost(plain, 4096)) === 0 && plain.value) {
    const f = { value: -1 };
    const code = t.cu.cuMemHostGetFlags(f, plain.value);
    t.call('allocHost:getFlags', code, code === 0 ? f.value : undefined);
    t.call('allocHost:free', t.cu.cuMemFreeHost(plain.value));
  }
  t.call('getFlagsPageable', t.cu.cuMemHostGetFlags({ value: -1 }, new Uint8Array(4096)));
});
def('copy.unifiedDirections', (t) => {
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  const data = pattern(4096, 64);
  t.call('hostToDevice', t.cu.cuMemcpy(base, data, 4096));
  t.call('deviceToDevice', t.cu.cuMemcpy(base + 8192n, base, 4096));
  const back = new Uint8Array(4096);
  t.call('deviceToHost', t.cu.cuMemcpy(back, base + 8192n, 4096));
  t.see('roundTrip', hex(back) === hex(data));
  const copy = new Uint8Array(4096);
  t.call('hostToHost', t.cu.cuMemcpy(copy, back, 4096));
  t.see('hostCopy', hex(copy) === hex(data));
  const s = t.stream();
  if (s) {
    t.call('asyncHostToDevice', t.cu.cuMemcpyAsync(base + 16384n, data, 4096, s));
    t.call('streamSync', t.cu.cuStreamSynchronize(s));
    t.readEquals(base + 16384n, data, 'readAsync');
  }
  t.call('zeroBytes', t.cu.cuMemcpy(base, back, 0));
});

// ---------------------------------------------------------------- events and created contexts (Note [Events])

/** Make an event with `flags`, recording the code; its destroy is recorded as cleanup. */
function eventOf(t: Trace, flags: number, label = 'cuEventCreate'): bigint {
  const box = { value: 0n };
  if (t.call(label, t.cu.cuEventCreate(box, flags)) !== 0) return 0n;
  const e = box.value;
  t.see(`${label}:nonNull`, e !== 0n);
  return e;
}
def('event.createFlags', (t) => {
  for (const [label, flags] of [
    ['default', 0],
    ['blockingSync', 1],
    ['disableTiming', 2],
    ['interprocessAlone', 4],
    ['interprocessDisableTiming', 6],
    ['unknownBit8', 8],
    ['allKnown', 7],
  ] as const) {
    const e = eventOf(t, flags, label);
    if (e) t.call(`${label}:destroy`, t.cu.cuEventDestroy(e));
  }
  t.call('nullBox', t.cu.cuEventCreate(null as never, 0));
});
def('event.neverRecorded', (t) => {
  const e = eventOf(t, 0);
  if (!e) return;
  t.call('query', t.cu.cuEventQuery(e));
  t.call('synchronize', t.cu.cuEventSynchronize(e));
  t.call('waitOnNullStream', t.cu.cuStreamWaitEvent(0n, e, 0));
  t.call('destroy', t.cu.cuEventDestroy(e));
});
def('event.recordSynchronizeQuery', (t) => {
  const { base, h } = t.mapped(t.G);
  const s = t.stream();
  const e = eventOf(t, CU_EVENT_DISABLE_TIMING);
  if (!base || !h || !s || !e) return;
  const data = pattern(4096, 60);
  t.call('HtoDAsync', t.cu.cuMemcpyHtoDAsync(base, data, 4096, s));
  t.call('record', t.cu.cuEventRecord(e, s));
  t.call('synchronize', t.cu.cuEventSynchronize(e));
  t.call('queryAfterSynchronize', t.cu.cuEventQuery(e));
  t.readEquals(base, data);
  t.call('destroy', t.cu.cuEventDestroy(e));
});
def('event.crossStreamWait', (t) => {
  const { base, h } = t.mapped(t.G);
  const a = t.stream('createA');
  const b = t.stream('createB');
  const e = eventOf(t, CU_EVENT_DISABLE_TIMING);
  if (!base || !h || !a || !b || !e) return;
  const data = pattern(65536, 61);
  t.call('HtoDAsyncOnA', t.cu.cuMemcpyHtoDAsync(base, data, data.length, a));
  t.call('recordOnA', t.cu.cuEventRecord(e, a));
  t.call('waitOnB', t.cu.cuStreamWaitEvent(b, e, 0));
  t.call('DtoDAsyncOnB', t.cu.cuMemcpyDtoDAsync(base + 65536n, base, data.length, b));
  t.call('syncB', t.cu.cuStreamSynchronize(b));
  t.call('queryAfterSyncB', t.cu.cuEventQuery(e));
  t.readEquals(base + 65536n, data);
  t.call('destroy', t.cu.cuEventDestroy(e));
});
def('event.recordSpecialStreams', (t) => {
  const e = eventOf(t, 0);
  if (!e) return;
  t.call('recordNull', t.cu.cuEventRecord(e, 0n));
  t.call('recordLegacy', t.cu.cuEventRecord(e, 1n));
  t.call('recordPerThread', t.cu.cuEventRecord(e, 2n));
  t.call('synchronize', t.cu.cuEventSynchronize(e));
  t.call('query', t.cu.cuEventQuery(e));
  t.call('waitLegacy', t.cu.cuStreamWaitEvent(1n, e, 0));
  t.call('destroy', t.cu.cuEventDestroy(e));
});
def('event.flagsOfRecordAndWait', (t) => {
  const e = eventOf(t, 0);
  const s = t.stream();
  if (!e || !s) return;
  t.call('recordFlags0', t.cu.cuEventRecordWithFlags(e, s, 0));
  t.call('recordFlagsExternal', t.cu.cuEventRecordWithFlags(e, s, 1));
  t.call('recordFlags2', t.cu.cuEventRecordWithFlags(e, s, 2));
  t.call('waitFlags0', t.cu.cuStreamWaitEvent(s, e, 0));
  t.call('waitFlagsExternal', t.cu.cuStreamWaitEvent(s, e, 1));
  t.call('waitFlags2', t.cu.cuStreamWaitEvent(s, e, 2));
  t.call('sync', t.cu.cuStreamSynchronize(s));
  t.call('destroy', t.cu.cuEventDestroy(e));
});
def('event.elapsedTime', (t) => {
  const a = eventOf(t, 0, 'createStart');
  const b = eventOf(t, 0, 'createEnd');
  const quiet = eventOf(t, CU_EVENT_DISABLE_TIMING, 'createNoTiming');
  if (!a || !b || !quiet) return;
  const ms = { value: -1 };
  t.call('neverRecorded', t.cu.cuEventElapsedTime(ms, a, b));
  t.call('recordStart', t.cu.cuEventRecord(a, 0n));
  t.call('recordEnd', t.cu.cuEventRecord(b, 0n));
  t.call('recordNoTiming', t.cu.cuEventRecord(quiet, 0n));
  t.call('syncEnd', t.cu.cuEventSynchronize(b));
  t.call('syncNoTiming', t.cu.cuEventSynchronize(quiet));
  // The time itself differs run to run: only that it is not negative.
  const code = t.cu.cuEventElapsedTime(ms, a, b);
  t.call('elapsed', code, code === 0 ? ms.value >= 0 : undefined);
  t.call('elapsedNoTiming', t.cu.cuEventElapsedTime(ms, a, quiet));
  t.call('elapsedNullBox', t.cu.cuEventElapsedTime(null as never, a, b));
  for (const [label, e] of [
    ['destroyStart', a],
    ['destroyEnd', b],
    ['destroyNoTiming', quiet],
  ] as const)
    t.call(label, t.cu.cuEventDestroy(e));
});
// A destroyed event handle: the driver may refuse it or fault (Note [Cases that may poison the context]).
def(
  'event.destroyedHandle',
  (t) => {
    const e = eventOf(t, 0);
    if (!e) return;
    t.call('destroy', t.cu.cuEventDestroy(e));
    t.call('queryDestroyed', t.cu.cuEventQuery(e));
    t.call('destroyAgain', t.cu.cuEventDestroy(e));
  },
  true,
);
def('event.destroyWhileQueued', (t) => {
  const { base, h } = t.mapped(t.G);
  const s = t.stream();
  const e = eventOf(t, CU_EVENT_DISABLE_TIMING);
  if (!base || !h || !s || !e) return;
  const data = pattern(4096, 62);
  t.call('HtoDAsync', t.cu.cuMemcpyHtoDAsync(base, data, 4096, s));
  t.call('record', t.cu.cuEventRecord(e, s));
  t.call('destroyBeforeSync', t.cu.cuEventDestroy(e));
  t.call('sync', t.cu.cuStreamSynchronize(s));
  t.readEquals(base, data);
});
def('event.streamDestroyedAfterRecord', (t) => {
  const box = { value: 0n };
  const e = eventOf(t, 0);
  if (!e || t.call('createStream', t.cu.cuStreamCreate(box, 0)) !== 0) return;
  t.call('record', t.cu.cuEventRecord(e, box.value));
  t.call('destroyStream', t.cu.cuStreamDestroy(box.value));
  t.call('synchronize', t.cu.cuEventSynchronize(e));
  t.call('query', t.cu.cuEventQuery(e));
  t.call('destroy', t.cu.cuEventDestroy(e));
});

def('ctx.createDestroy', (t) => {
  const primary = currentContext(t);
  const box = { value: 0n };
  if (t.call('create', t.cu.cuCtxCreate(box, 0, t.env.dev)) !== 0) return;
  const c = box.value;
  t.see('createdIsNotPrimary', c !== primary);
  t.see('createdIsCurrent', currentContext(t) === c);
  t.call('destroy', t.cu.cuCtxDestroy(c));
  t.see('primaryCurrentAgain', currentContext(t) === primary);
  if (currentContext(t) !== primary) t.cu.cuCtxSetCurrent(primary);
});
def('ctx.createFlagsAndDevice', (t) => {
  const primary = currentContext(t);
  for (const [label, flags, dev] of [
    ['schedSpin', 1, t.env.dev],
    ['schedBlockingSync', 4, t.env.dev],
    ['schedSpinYield', 3, t.env.dev],
    ['unknownBit', 0x100, t.env.dev],
    ['badDevice', 0, t.env.deviceCount],
  ] as const) {
    const box = { value: 0n };
    if (t.call(label, t.cu.cuCtxCreate(box, flags, dev)) === 0)
      t.call(`${label}:destroy`, t.cu.cuCtxDestroy(box.value));
  }
  t.call('nullBox', t.cu.cuCtxCreate(null as never, 0, t.env.dev));
  if (currentContext(t) !== primary) t.cu.cuCtxSetCurrent(primary);
});
def('ctx.destroyReleasesItsMemoryAndStreams', (t) => {
  const primary = currentContext(t);
  const box = { value: 0n };
  if (t.call('create', t.cu.cuCtxCreate(box, 0, t.env.dev)) !== 0) return;
  const c = box.value;
  const p = { value: 0n };
  t.call('memAlloc', t.cu.cuMemAlloc(p, t.G));
  const s = { value: 0n };
  t.call('streamCreate', t.cu.cuStreamCreate(s, 0));
  // VMM memory is not the context's: it outlives cuCtxDestroy.
  const h = t.create(t.G);
  t.call('destroy', t.cu.cuCtxDestroy(c));
  if (currentContext(t) !== primary) t.cu.cuCtxSetCurrent(primary);
  const base = t.reserve(t.G);
  if (h && base) {
    t.map(base, t.G, h);
    t.access(base, t.G, RW);
    const data = pattern(64, 63);
    t.write(base, data, 'vmmWriteAfterDestroy');
    t.readEquals(base, data);
  }
});
/** A context of its own on the case's device, pushed current; its destroy (which makes `primary` current again) is up to the case. */
function createdContext(t: Trace): bigint {
  const box = { value: 0n };
  return t.call('ctxCreate', t.cu.cuCtxCreate(box, 0, t.env.dev)) === 0 ? box.value : 0n;
}
// Issue 17, item 4: an event and a stream of two contexts on one device are of two contexts.
def('ctx.recordEventOfOtherContext', (t) => {
  const primary = currentContext(t);
  const c = createdContext(t);
  if (!c) return;
  const e = { value: 0n };
  t.call('eventCreateInCreated', t.cu.cuEventCreate(e, CU_EVENT_DISABLE_TIMING));
  t.call('setPrimary', t.cu.cuCtxSetCurrent(primary));
  const s = { value: 0n };
  t.call('streamCreateInPrimary', t.cu.cuStreamCreate(s, 0));
  t.call('recordOnPrimaryStream', t.cu.cuEventRecord(e.value, s.value));
  t.call('recordOnNullStream', t.cu.cuEventRecord(e.value, 0n));
  t.call('recordWithFlagsOnNullStream', t.cu.cuEventRecordWithFlags(e.value, 0n, 0));
  t.call('waitFromPrimaryStream', t.cu.cuStreamWaitEvent(s.value, e.value, 0));
  t.call('streamDestroy', t.cu.cuStreamDestroy(s.value));
  t.call('setCreated', t.cu.cuCtxSetCurrent(c));
  t.call('recordOnOwnNullStream', t.cu.cuEventRecord(e.value, 0n));
  t.call('eventSynchronize', t.cu.cuEventSynchronize(e.value));
  t.call('eventDestroy', t.cu.cuEventDestroy(e.value));
  t.call('ctxDestroy', t.cu.cuCtxDestroy(c));
  if (currentContext(t) !== primary) t.cu.cuCtxSetCurrent(primary);
});
def('ctx.pointerContextOfCreatedContextMemory', (t) => {
  const primary = currentContext(t);
  const c = createdContext(t);
  if (!c) return;
  const p = { value: 0n };
  if (t.call('memAllocInCreated', t.cu.cuMemAlloc(p, t.G)) === 0) {
    t.call('setPrimary', t.cu.cuCtxSetCurrent(primary));
    const which = (v: number | bigint) =>
      v === c ? 'created' : v === primary ? 'primary' : v === 0n ? 0 : 'other';
    const one: Box<number | bigint> = { value: -1 };
    const code = t.cu.cuPointerGetAttribute(one, PTR.CONTEXT, p.value + 64n);
    t.call('contextAttribute', code, code === 0 ? which(one.value) : undefined);
    const boxes: Box<number | bigint>[] = [{ value: -1 }, { value: -1 }];
    const all = t.cu.cuPointerGetAttributes(2, [PTR.CONTEXT, PTR.DEVICE_ORDINAL], boxes, p.value);
    t.call(
      'attributesAtOnce',
      all,
      all === 0 ? [which(boxes[0]!.value), Number(boxes[1]!.value)] : undefined,
    );
    t.call('setCreated', t.cu.cuCtxSetCurrent(c));
    t.call('memFree', t.cu.cuMemFree(p.value));
  }
  t.call('ctxDestroy', t.cu.cuCtxDestroy(c));
  if (currentContext(t) !== primary) t.cu.cuCtxSetCurrent(primary);
});
// The NULL stream of one context waits on another context's event: its synchronisation has run that work.
def('ctx.nullStreamWaitsOnOtherContextEvent', (t) => {
  const primary = currentContext(t);
  const { base, h } = t.mapped(t.G);
  if (!base || !h) return;
  const c = createdContext(t);
  if (!c) return;
  const s = { value: 0n };
  const e = { value: 0n };
  t.call('streamCreateInCreated', t.cu.cuStreamCreate(s, 0));
  t.call('eventCreateInCreated', t.cu.cuEventCreate(e, CU_EVENT_DISABLE_TIMING));
  t.call('memsetAsyncInCreated', t.cu.cuMemsetD8Async(base, 0x5a, t.G, s.value));
  t.call('recordInCreated', t.cu.cuEventRecord(e.value, s.value));
  t.call('setPrimary', t.cu.cuCtxSetCurrent(primary));
  t.call('nullStreamWait', t.cu.cuStreamWaitEvent(0n, e.value, 0));
  t.call('nullStreamSynchronize', t.cu.cuStreamSynchronize(0n));
  t.call('queryAfter', t.cu.cuEventQuery(e.value));
  t.readEquals(base, new Uint8Array(64).fill(0x5a));
  t.call('setCreated', t.cu.cuCtxSetCurrent(c));
  t.call('streamDestroy', t.cu.cuStreamDestroy(s.value));
  t.call('eventDestroy', t.cu.cuEventDestroy(e.value));
  t.call('ctxDestroy', t.cu.cuCtxDestroy(c));
  if (currentContext(t) !== primary) t.cu.cuCtxSetCurrent(primary);
});
// Issue 17, item 1: cuCtxCreate as CUDA 13.0's cuda.h declares it (Note [Context creation parameters]).
/** One cuCtxCreate (the v4 form when `params` is given), recorded; a context it made is destroyed at once. */
function createAndDestroy(t: Trace, label: string, create: (box: Box<bigint>) => number): void {
  const primary = currentContext(t);
  const box = { value: 0n };
  if (t.call(label, create(box)) === 0) {
    t.see(`${label}:current`, currentContext(t) === box.value && box.value !== primary);
    t.call(`${label}:destroy`, t.cu.cuCtxDestroy(box.value));
  }
  if (currentContext(t) !== primary) t.cu.cuCtxSetCurrent(primary);
}
const SM_COUNT_8 = { type: 0, param: { smCount: { val: 8 } } };
def('ctx.createV4Forms', (t) => {
  const dev = t.env.dev;
  createAndDestroy(t, 'zeroedParams', (b) => t.cu.cuCtxCreate(b, {}, 0, dev));
  createAndDestroy(t, 'nullParams', (b) => t.cu.cuCtxCreate(b, null, 0, dev));
  createAndDestroy(t, 'allNullFields', (b) =>
    t.cu.cuCtxCreate(b, { execAffinityParams: null, numExecAffinityParams: 0, cigParams: null }, 4, dev),
  );
  createAndDestroy(t, 'threeArguments', (b) => t.cu.cuCtxCreate(b, 0, dev));
  createAndDestroy(t, 'explicitV2', (b) => t.cu.cuCtxCreate_v2(b, 1, dev));
  createAndDestroy(t, 'explicitV4', (b) => t.cu.cuCtxCreate_v4(b, {}, 0, dev));
  createAndDestroy(t, 'badFlags', (b) => t.cu.cuCtxCreate(b, {}, 3, dev));
  createAndDestroy(t, 'badDevice', (b) => t.cu.cuCtxCreate(b, {}, 0, t.env.deviceCount));
  createAndDestroy(t, 'nullBox', () => t.cu.cuCtxCreate(null as never, {}, 0, dev));
});
def('ctx.createV4Params', (t) => {
  const dev = t.env.dev;
  const v4 = (label: string, params: Parameters<CudaApi['cuCtxCreate_v4']>[1]) =>
    createAndDestroy(t, label, (b) => t.cu.cuCtxCreate_v4(b, params, 0, dev));
  v4('countWithoutArray', { numExecAffinityParams: 1 });
  v4('negativeCount', { numExecAffinityParams: -1 });
  v4('emptyAffinity', { execAffinityParams: [], numExecAffinityParams: 0 });
  v4('smCount8', { execAffinityParams: [SM_COUNT_8], numExecAffinityParams: 1 });
  v4('smCountTwice', { execAffinityParams: [SM_COUNT_8, SM_COUNT_8], numExecAffinityParams: 2 });
  v4('affinityTypeMax', {
    execAffinityParams: [{ type: 1, param: { smCount: { val: 8 } } }],
    numExecAffinityParams: 1,
  });
  v4('cigVulkanBlobNull', { cigParams: { sharedDataType: 2, sharedData: null } });
  v4('cigD3d12QueueNull', { cigParams: { sharedDataType: 1, sharedData: null } });
  v4('cigBadType', { cigParams: { sharedDataType: 7, sharedData: null } });
});
// Both set is undefined behaviour by the documentation: a case of its own, as it may end the process.
def(
  'ctx.createV4AffinityAndCig',
  (t) =>
    createAndDestroy(t, 'both', (b) =>
      t.cu.cuCtxCreate_v4(
        b,
        {
          execAffinityParams: [SM_COUNT_8],
          numExecAffinityParams: 1,
          cigParams: { sharedDataType: 2, sharedData: null },
        },
        0,
        t.env.dev,
      ),
    ),
  true,
);
def('ctx.destroyNull', (t) => void t.call('destroyNull', t.cu.cuCtxDestroy(0n)));
def(
  'ctx.destroyPrimary',
  (t) => {
    const primary = currentContext(t);
    t.call('destroyPrimary', t.cu.cuCtxDestroy(primary));
    t.call('setPrimaryAgain', t.cu.cuCtxSetCurrent(primary));
    t.call('synchronize', t.cu.cuCtxSynchronize());
  },
  true,
);

// ---------------------------------------------------------------- groups in files of their own

/** Groups of cases kept in conformance/cuda/cases/<topic>.ts, each registering through `def`. */
const CASE_GROUPS: readonly ((define: Define) => void)[] = [
  captureCases,
  settleCases,
  startupHeapCases,
  hostPointerCases,
  contextV2Cases,
  primaryDestroyCases,
  stickyFaultCases,
];
for (const group of CASE_GROUPS) group(def);

export function caseNames(): string[] {
  return Object.keys(CASES);
}
export function getCase(name: string): CaseInfo {
  const c = CASES[name];
  if (!c) throw new Error(`no case ${name}`);
  return c;
}

/** cuda.h's CU_EVENT_DISABLE_TIMING. */
const CU_EVENT_DISABLE_TIMING = 2;
