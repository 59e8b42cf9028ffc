/**
 * Estimated H200 driver time of what an allocator does through a Runtime,
 * priced per handle (DESIGN.md's measurements, driver 580): cuMemSetAccess
 * and cuMemUnmap cost per handle in the range (about 37 us and 20 us per
 * 2 MiB handle; one 512 MiB handle 61 us to grant), cuMemCreate 12.4 us up
 * to 64 MiB and 109 us at 1 GiB, cuMemRelease 13.1 us at 2 MiB and 467 us at
 * 1 GiB, cuMemMap 1 us, reserve and free 0.7 us. Sizes between measured
 * points are interpolated linearly, beyond the last extrapolated.
 */
import type { AccessDescriptor, Runtime } from '../../../src/core/runtime.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

type Curve = readonly (readonly [number, number])[];
const CREATE: Curve = [
  [2 * MiB, 12.4],
  [64 * MiB, 12.4],
  [GiB, 109],
];
const RELEASE: Curve = [
  [2 * MiB, 13.1],
  [GiB, 467],
];
const SET_ACCESS_PER_HANDLE: Curve = [
  [2 * MiB, 37],
  [512 * MiB, 61],
  [GiB, 128],
];
const UNMAP_PER_HANDLE: Curve = [[2 * MiB, 20]];
const MAP = 1;
const RESERVE = 0.7;

function price(curve: Curve, bytes: number): number {
  if (curve.length === 1 || bytes <= curve[0][0]) return curve[0][1];
  let hi = 1;
  while (hi < curve.length - 1 && curve[hi][0] < bytes) hi++;
  const [x0, y0] = curve[hi - 1];
  const [x1, y1] = curve[hi];
  return Math.max(0, y0 + ((bytes - x0) / (x1 - x0)) * (y1 - y0));
}

export interface DriverEstimate {
  us: number;
  /** Wall time inside the metered calls (on a GPU: the driver's real time), microseconds. */
  measuredUs: number;
  creates: number;
  releases: number;
  maps: number;
  unmaps: number;
  setAccessHandles: number;
}

/** Wrap `rt`'s VMM methods (this instance only) to price each call; returns the running estimate. */
export function meter(rt: Runtime): DriverEstimate {
  const e: DriverEstimate = {
    us: 0,
    measuredUs: 0,
    creates: 0,
    releases: 0,
    maps: 0,
    unmaps: 0,
    setAccessHandles: 0,
  };
  const { reserve, free, create, release, map, unmap, setAccess } = rt;
  const target = rt as unknown as Record<string, unknown>;
  const timed = <T>(f: () => T): T => {
    const t0 = performance.now();
    try {
      return f();
    } finally {
      e.measuredUs += (performance.now() - t0) * 1000;
    }
  };
  target.reserve = (size: number, o?: object) => {
    e.us += RESERVE;
    return timed(() => reserve.call(rt, size, o));
  };
  target.free = (r: Parameters<Runtime['free']>[0]) => {
    e.us += RESERVE;
    return timed(() => free.call(rt, r));
  };
  target.create = (size: number, props: Parameters<Runtime['create']>[1]) => {
    const a = timed(() => create.call(rt, size, props));
    e.us += price(CREATE, size);
    e.creates++;
    return a;
  };
  target.release = (a: Parameters<Runtime['release']>[0]) => {
    const size = a.size;
    timed(() => release.call(rt, a));
    e.us += price(RELEASE, size);
    e.releases++;
  };
  target.map = (va: number, size: number, a: Parameters<Runtime['map']>[2], offset?: number) => {
    const m = timed(() => map.call(rt, va, size, a, offset));
    e.us += MAP;
    e.maps++;
    return m;
  };
  target.unmap = (va: number, size: number) => {
    const handles = rt.mappingsIn(va, size);
    const sizes = handles.map((m) => m.allocation);
    timed(() => unmap.call(rt, va, size));
    for (const m of handles) e.us += price(UNMAP_PER_HANDLE, m.size);
    e.unmaps += handles.length;
    // An allocation whose last reference was the mapping is released inside unmap.
    for (const a of sizes) {
      if (a.owner === undefined) {
        e.us += price(RELEASE, a.size);
        e.releases++;
      }
    }
  };
  target.setAccess = (va: number, size: number, d: readonly AccessDescriptor[]) => {
    const handles = rt.mappingsIn(va, size);
    timed(() => setAccess.call(rt, va, size, d));
    for (const m of handles) e.us += d.length * price(SET_ACCESS_PER_HANDLE, m.size);
    e.setAccessHandles += handles.length * d.length;
  };
  return e;
}
