/**
 * Device pointers of page-locked host memory (issue 17, item 1):
 * cuMemHostGetDevicePointer (cuda.h's name for cuMemHostGetDevicePointer_v2)
 * and what the pointer attributes say of the same memory. Recorded values are
 * offsets from the host buffer's device pointer and "same value" booleans.
 */
import type { Box } from '../api.js';
import { type Define, hex, pattern, type Trace } from './trace.js';

/** cuda.h's CUpointer_attribute values these cases ask. */
const ATTR = {
  CONTEXT: 1,
  MEMORY_TYPE: 2,
  DEVICE_POINTER: 3,
  HOST_POINTER: 4,
  IS_MANAGED: 8,
  DEVICE_ORDINAL: 9,
  RANGE_START_ADDR: 11,
  RANGE_SIZE: 12,
  MAPPED: 13,
} as const;
/** cuda.h's CU_MEMHOSTALLOC_* bits. */
const PORTABLE = 1;
const DEVICEMAP = 2;
const WRITECOMBINED = 4;

/** cuMemHostGetDevicePointer of `p` under the unversioned name; the pointer, or undefined on failure. */
function devicePointer(t: Trace, label: string, p: Uint8Array | bigint, flags = 0): bigint | undefined {
  const box = { value: 0n };
  const code = t.call(label, t.cu.cuMemHostGetDevicePointer(box, p, flags));
  return code === 0 ? box.value : undefined;
}

/** A pointer-valued answer as an offset from `base` ('NULL' for 0). */
function offset(value: number | bigint, base: bigint): number | string {
  const v = BigInt(value);
  return v === 0n ? 'NULL' : Number(v - base);
}

/** Each attribute of `ptr`, pointers as offsets from `base`, the context as 'current' or not. */
function attributesOf(t: Trace, label: string, ptr: Uint8Array | bigint, base: bigint): void {
  const current = { value: 0n };
  t.cu.cuCtxGetCurrent(current);
  for (const [name, a] of Object.entries(ATTR)) {
    const box: Box<number | bigint> = { value: -1 };
    const code = t.cu.cuPointerGetAttribute(box, a, ptr);
    let value: number | string | boolean | undefined;
    if (code === 0) {
      if (a === ATTR.CONTEXT) value = BigInt(box.value) === current.value ? 'current' : offset(box.value, 0n);
      else if (a === ATTR.DEVICE_POINTER || a === ATTR.HOST_POINTER || a === ATTR.RANGE_START_ADDR)
        value = offset(box.value, base);
      else value = Number(box.value);
    }
    t.call(`${label}.${name}`, code, value);
  }
}

/** Host memory of 8192 bytes from cuMemHostAlloc (flags) or cuMemAllocHost (null), and its free; freed at cleanup unless freed. */
function hostMemory(
  t: Trace,
  flags: number | null,
  label: string,
): { host: Uint8Array; free(label: string): number } | undefined {
  const box: Box<Uint8Array | null> = { value: null };
  const code = flags === null ? t.cu.cuMemAllocHost(box, 8192) : t.cu.cuMemHostAlloc(box, 8192, flags);
  if (t.call(label, code) !== 0 || box.value === null) return undefined;
  const host = box.value;
  let freed = false;
  t.later('cuMemFreeHost', () => (freed ? 0 : t.cu.cuMemFreeHost(host)));
  return {
    host,
    free(label: string): number {
      const c = t.call(label, t.cu.cuMemFreeHost(host));
      if (c === 0) freed = true;
      return c;
    },
  };
}

/**
 * The device pointer of host memory, for each way of allocating it: whether it
 * is the host address (unified addressing), the interior pointer's offset,
 * the explicit _v2 name's answer, the pointer attributes of the memory asked
 * through the host pointer and through the device pointer, and copies through
 * the device pointer reaching the host bytes.
 */
function devicePointerCase(t: Trace, flags: number | null): void {
  const made = hostMemory(t, flags, 'alloc');
  if (made === undefined) return;
  const { host } = made;
  const dptr = devicePointer(t, 'devicePointer', host);
  if (dptr === undefined) return;
  const v2 = { value: 0n };
  const v2Code = t.cu.cuMemHostGetDevicePointer_v2(v2, host, 0);
  t.call('devicePointer_v2', v2Code, v2Code === 0 ? v2.value === dptr : undefined);
  const inner = devicePointer(t, 'interior', host.subarray(4096 + 8));
  if (inner !== undefined) t.see('interiorOffset', Number(inner - dptr));
  // Under unified addressing the device pointer is the host address: asked back as the host pointer.
  const asHost = devicePointer(t, 'ofDevicePointer', dptr + 16n);
  if (asHost !== undefined) t.see('ofDevicePointerOffset', Number(asHost - dptr));
  attributesOf(t, 'attrOfHost', host, dptr);
  attributesOf(t, 'attrOfDevicePointer', dptr + 8n, dptr);
  host.set(pattern(8192, 91));
  const back = new Uint8Array(64);
  const code = t.call('DtoHThroughDevicePointer', t.cu.cuMemcpyDtoH(back, dptr + 100n, 64));
  if (code === 0) t.see('readsHostBytes', hex(back) === hex(host.subarray(100, 164)));
  const data = pattern(64, 92);
  if (t.call('HtoDThroughDevicePointer', t.cu.cuMemcpyHtoD(dptr + 200n, data, 64)) === 0)
    t.see('writesHostBytes', hex(host.subarray(200, 264)) === hex(data));
  const s = t.stream();
  if (s) {
    t.call('memsetAsyncThroughDevicePointer', t.cu.cuMemsetD8Async(dptr + 300n, 0x5a, 16, s));
    t.call('streamSync', t.cu.cuStreamSynchronize(s));
    t.see(
      'memsetReachesHost',
      host.subarray(300, 316).every((b) => b === 0x5a),
    );
  }
  if (made.free('free') !== 0) return;
  devicePointer(t, 'freed', host);
  const type: Box<number | bigint> = { value: -1 };
  t.call('freedMemoryType', t.cu.cuPointerGetAttribute(type, ATTR.MEMORY_TYPE, dptr));
}

export function hostPointerCases(def: Define): void {
  def('hostPtr.hostAllocDefault', (t) => devicePointerCase(t, 0));
  def('hostPtr.hostAllocDeviceMap', (t) => devicePointerCase(t, DEVICEMAP));
  def('hostPtr.hostAllocAllFlags', (t) => devicePointerCase(t, PORTABLE | DEVICEMAP | WRITECOMBINED));
  def('hostPtr.allocHost', (t) => devicePointerCase(t, null));

  def('hostPtr.badArguments', (t) => {
    const host = hostMemory(t, DEVICEMAP, 'alloc')?.host;
    if (host === undefined) return;
    for (const flags of [1, 2, 0x80000000]) devicePointer(t, `flags${flags}`, host, flags);
    t.call('nullBox', t.cu.cuMemHostGetDevicePointer(null, host, 0));
    t.call('nullBoxBadFlags', t.cu.cuMemHostGetDevicePointer(null, host, 1));
    devicePointer(t, 'pageable', new Uint8Array(4096));
    devicePointer(t, 'nullPointer', 0n);
    const start = devicePointer(t, 'devicePointer', host);
    if (start !== undefined) devicePointer(t, 'pastTheEnd', start + 8192n);
    const dev = { value: 0n };
    if (t.call('cuMemAlloc', t.cu.cuMemAlloc(dev, 1 << 20)) === 0) {
      const d = dev.value;
      t.later('cuMemFree', () => t.cu.cuMemFree(d));
      devicePointer(t, 'deviceMemory', d);
    }
    const { base } = t.mapped(t.G);
    if (base) devicePointer(t, 'vmmMemory', base);
  });

  // A 0-byte cuMemAllocHost succeeds (host.allocSize0AndNullBox): has it a device pointer?
  def('hostPtr.size0', (t) => {
    const box: Box<Uint8Array | null> = { value: null };
    if (t.call('alloc', t.cu.cuMemAllocHost(box, 0)) !== 0 || box.value === null) return;
    devicePointer(t, 'devicePointer', box.value);
    t.call('free', t.cu.cuMemFreeHost(box.value));
  });

  // A device pointer of host memory used where device memory goes: cuMemcpyDtoD both ways, and cuMemcpy.
  // A copy past the host buffer's end may fault on the GPU (Note [Cases that may poison the context]).
  def(
    'hostPtr.deviceToDevice',
    (t) => {
      const host = hostMemory(t, 0, 'alloc')?.host;
      if (host === undefined) return;
      const dptr = devicePointer(t, 'devicePointer', host);
      const { base } = t.mapped(t.G);
      if (dptr === undefined || !base) return;
      const data = pattern(4096, 93);
      host.set(data);
      t.call('hostToDevice', t.cu.cuMemcpyDtoD(base, dptr, 4096));
      t.readEquals(base, data, 'readDevice');
      host.fill(0);
      t.call('deviceToHost', t.cu.cuMemcpyDtoD(dptr + 4096n, base, 4096));
      t.see('hostHasBytes', hex(host.subarray(4096)) === hex(data));
      t.call('unifiedToDevice', t.cu.cuMemcpy(base + 8192n, dptr + 4096n, 4096));
      t.readEquals(base + 8192n, data, 'readUnified');
      const out = new Uint8Array(4096);
      t.call('unifiedToPageable', t.cu.cuMemcpy(out, dptr + 4096n, 4096));
      t.see('pageableHasBytes', hex(out) === hex(data));
      t.call('pastTheEnd', t.cu.cuMemcpyDtoD(base, dptr + 4096n, 8192));
    },
    true,
  );
}
