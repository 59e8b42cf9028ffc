/** A frame of `layer`: `frame('hip')('hipMemMap')`. */
export function frameOf(layer) {
  return (name) => ({ layer, name });
}
/**
 * The state as lines: each reservation with its mappings (and the unmapped
 * gaps between them), then the handles with their reference counts and
 * where they are mapped. Deterministic: address order, handle order.
 */
export function renderState(d, words) {
  const lines = [words.process(d)];
  const mappedAt = new Map();
  const accessOf = (m) => {
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
export function hex(n) {
  return `0x${n.toString(16)}`;
}
/** Where memory lives, in plain words. */
export function placeOf(location) {
  return location.type === 'device' ? `device ${location.id}` : `host (NUMA node ${location.id})`;
}
/** The machine's devices, named once each: "1 x MI300X". */
export function devicesOf(d) {
  const counts = new Map();
  for (const dev of d.devices) counts.set(dev.name, (counts.get(dev.name) ?? 0) + 1);
  return [...counts].map(([name, n]) => `${n} x ${name}`).join(', ');
}
const libcuda = frameOf('libcuda');
/**
 * The backend primitives as the real NVIDIA backend makes them: each one is
 * a call into libcuda.so.1 (src/backends/cuda/backend.ts). Copies are named
 * for the primitive alone: the backend picks among cuMemcpy* variants by stream.
 */
const REAL_DRIVER_STEPS = {
  'backend:reserve': { path: [libcuda('cuMemAddressReserve')] },
  'backend:free': { path: [libcuda('cuMemAddressFree')] },
  'backend:create': { path: [libcuda('cuMemCreate')] },
  'backend:release': { path: [libcuda('cuMemRelease')] },
  'backend:map': { path: [libcuda('cuMemMap')] },
  'backend:unmap': { path: [libcuda('cuMemUnmap')] },
  'backend:setAccess': { path: [libcuda('cuMemSetAccess')] },
  'backend:exportFd': { path: [libcuda('cuMemExportToShareableHandle')] },
  'backend:importFd': { path: [libcuda('cuMemImportFromShareableHandle')] },
};
/**
 * A vendor's table for a process whose backend is the real NVIDIA driver:
 * the vendor's upper layers stay, while whatever the table said about the
 * layers below (backend primitives, simulated device events) gives way to the
 * libcuda call that really runs. On the simulator the table is used as is.
 */
export function layersFor(table, backend) {
  if (backend === 'sim') return table;
  const steps = {};
  for (const [key, step] of Object.entries(table.steps)) {
    const last = key.slice(key.lastIndexOf('>') + 1).trim();
    if (!last.startsWith('backend:') && !last.startsWith('device:')) steps[key] = step;
  }
  return { ...table, steps: { ...steps, ...REAL_DRIVER_STEPS } };
}
//# sourceMappingURL=layers.js.map
