/**
 * What a flavor shows a debugger: its vendor's layer table (the trace in the
 * vendor's own layers and function names, Note [Vendor layers] in
 * core/trace.ts) and the process state in the vendor's object model. Each
 * flavor's layers.ts fills one in; the inspection view (flavors/inspect.ts)
 * prints through it.
 */
import type { RuntimeDescription } from '../../core/runtime.js';
import type { VendorFrame, VendorLayers } from '../../core/trace.js';
import type { Access } from '../../core/types.js';

export interface VendorView {
  readonly layers: VendorLayers;
  /** `Runtime.describe()` in the vendor's words, one object per line. */
  formatState(description: RuntimeDescription): string;
}

/** A frame of `layer`: `frame('hip')('hipMemMap')`. */
export function frameOf(layer: string): (name: string) => VendorFrame {
  return (name) => ({ layer, name });
}

type ReservationInfo = RuntimeDescription['reservations'][number];
type MappingInfo = ReservationInfo['mappings'][number];
type AllocationInfo = RuntimeDescription['allocations'][number];

/** How a vendor names each object of the state (see renderState). */
export interface StateWords {
  /** The first line: the process. */
  process(d: RuntimeDescription): string;
  /** A VMM reservation (the parent range). */
  reservation(r: ReservationInfo): string;
  /** A mapping inside it, cross-linked to its allocation. */
  mapping(m: MappingInfo, access: string): string;
  /** A one-step allocation (hipMalloc / cuMemAlloc / aclrtMalloc). */
  oneStep(r: ReservationInfo, access: string): string;
  /** A live handle, with the addresses it is mapped at. */
  allocation(a: AllocationInfo, mappedAt: readonly number[]): string;
  /** One device's access, in the vendor's flag names. */
  access(a: Access): string;
}

/**
 * The state as lines: each reservation with its mappings (and the unmapped
 * gaps between them), then the handles with their reference counts and
 * where they are mapped. Deterministic: address order, handle order.
 */
export function renderState(d: RuntimeDescription, words: StateWords): string {
  const lines = [words.process(d)];
  const mappedAt = new Map<number, number[]>();
  const accessOf = (m: MappingInfo) => {
    const granted = m.access.flatMap((a, device) => (a === 0 ? [] : [`device ${device} ${words.access(a)}`]));
    return granted.length === 0 ? 'no device has access' : granted.join(', ');
  };
  for (const r of d.reservations) {
    if (r.origin === 'malloc') {
      const m = r.mappings[0];
      lines.push(`  ${words.oneStep(r, m === undefined ? 'unmapped' : accessOf(m))}`);
      continue;
    }
    lines.push(`  ${words.reservation(r)}`);
    let at = r.base;
    for (const m of r.mappings) {
      if (m.va > at) lines.push(`    unmapped ${hex(at)} +${hex(m.va - at)}`);
      lines.push(`    ${words.mapping(m, accessOf(m))}`);
      const list = mappedAt.get(m.handle) ?? [];
      list.push(m.va);
      mappedAt.set(m.handle, list);
      at = m.va + m.size;
    }
    if (at < r.base + r.size) lines.push(`    unmapped ${hex(at)} +${hex(r.base + r.size - at)}`);
  }
  for (const a of d.allocations) {
    if (a.origin === 'malloc') continue;
    lines.push(`  ${words.allocation(a, mappedAt.get(a.handle) ?? [])}`);
  }
  if (lines.length === 1) lines.push('  (nothing reserved, mapped or allocated)');
  return lines.join('\n');
}

export function hex(n: number | bigint): string {
  return `0x${n.toString(16)}`;
}

/** Where memory lives, in plain words. */
export function placeOf(location: AllocationInfo['location']): string {
  return location.type === 'device' ? `device ${location.id}` : `host (NUMA node ${location.id})`;
}

/** The machine's devices, named once each: "1 x MI300X". */
export function devicesOf(d: RuntimeDescription): string {
  const counts = new Map<string, number>();
  for (const dev of d.devices) counts.set(dev.name, (counts.get(dev.name) ?? 0) + 1);
  return [...counts].map(([name, n]) => `${n} x ${name}`).join(', ');
}

const libcuda = frameOf('libcuda');

/**
 * The backend primitives as the real NVIDIA backend makes them: each one is
 * a call into libcuda.so.1 (src/backends/cuda/backend.ts). Copies are named
 * for the primitive alone: the backend picks among cuMemcpy* variants by stream.
 */
const REAL_DRIVER_STEPS: Readonly<Record<string, { readonly path: readonly VendorFrame[] }>> = {
  'backend:reserve': { path: [libcuda('cuMemAddressReserve')] },
  'backend:free': { path: [libcuda('cuMemAddressFree')] },
  'backend:create': { path: [libcuda('cuMemCreate')] },
  'backend:release': { path: [libcuda('cuMemRelease')] },
  'backend:map': { path: [libcuda('cuMemMap')] },
  'backend:unmap': { path: [libcuda('cuMemUnmap')] },
  'backend:setAccess': { path: [libcuda('cuMemSetAccess')] },
  'backend:setHostAccess': { path: [libcuda('cuMemSetAccess')] },
  'backend:exportFd': { path: [libcuda('cuMemExportToShareableHandle')] },
  'backend:importFd': { path: [libcuda('cuMemImportFromShareableHandle')] },
  'backend:createEvent': { path: [libcuda('cuEventCreate')] },
  'backend:recordEvent': { path: [libcuda('cuEventRecord')] },
  'backend:queryEvent': { path: [libcuda('cuEventQuery')] },
  'backend:synchronizeEvent': { path: [libcuda('cuEventSynchronize')] },
  'backend:streamWaitEvent': { path: [libcuda('cuStreamWaitEvent')] },
  'backend:destroyEvent': { path: [libcuda('cuEventDestroy')] },
  'backend:elapsedTime': { path: [libcuda('cuEventElapsedTime')] },
};

/**
 * A vendor's table for a process whose backend is the real NVIDIA driver:
 * the vendor's upper layers stay, while whatever the table said about the
 * layers below (backend primitives, simulated device events) gives way to the
 * libcuda call that really runs. On the simulator, or a backend of one's
 * own, the table is used as is.
 */
export function layersFor(table: VendorLayers, backend: string): VendorLayers {
  if (backend !== 'cuda') return table;
  const steps: Record<string, VendorLayers['steps'][string]> = {};
  for (const [key, step] of Object.entries(table.steps)) {
    const last = key.slice(key.lastIndexOf('>') + 1).trim();
    if (!last.startsWith('backend:') && !last.startsWith('device:')) steps[key] = step;
  }
  return { ...table, steps: { ...steps, ...REAL_DRIVER_STEPS } };
}
