import { formatValue, type Tracer } from '../../core/trace.js';
import { createCuda } from '../../entry/processes.js';
import * as C from '../../flavors/cuda/constants.js';
import type { CUmemAccessDesc, CUmemAllocationProp } from '../../flavors/cuda/cuda.js';

/**
 * The seeds' typical sequence (seed 1, section 6) through the CUDA flavor
 * on a simulated H200: reserve, create, map, grant access, write and read
 * real bytes, grow the buffer in place by mapping a second handle right
 * after the first (same pointer), then undo in reverse. One line per call;
 * the caller prints the trace. True when every call and check succeeded.
 */
export function cudaDemo(print: (line: string) => void, tracer: Tracer): boolean {
  const cu = createCuda({ tracer });
  let ok = true;
  const call = (name: string, args: readonly unknown[], code: number): number => {
    print(`${name}(${args.map(show).join(', ')}) -> ${C.CUDA_RESULTS.get(code)?.[0] ?? code}`);
    if (code !== C.CUDA_SUCCESS) ok = false;
    return code;
  };
  const check = (what: string, holds: boolean): void => {
    print(`  check: ${what}: ${holds ? 'yes' : 'NO'}`);
    if (!holds) ok = false;
  };
  try {
    call('cuInit', [0], cu.cuInit(0));
    const dev = { value: 0 };
    call('cuDeviceGet', [dev, 0], cu.cuDeviceGet(dev, 0));
    const ctx = { value: 0n };
    call('cuDevicePrimaryCtxRetain', [ctx, dev.value], cu.cuDevicePrimaryCtxRetain(ctx, dev.value));
    call('cuCtxSetCurrent', [ctx.value], cu.cuCtxSetCurrent(ctx.value));

    const prop: CUmemAllocationProp = {
      type: C.CU_MEM_ALLOCATION_TYPE_PINNED,
      requestedHandleTypes: C.CU_MEM_HANDLE_TYPE_NONE,
      location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: dev.value },
    };
    const g = { value: 0 };
    const option = C.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED;
    call(
      'cuMemGetAllocationGranularity',
      [g, prop, option],
      cu.cuMemGetAllocationGranularity(g, prop, option),
    );
    const size = g.value;

    // 1. Reserve room for two chunks (no memory yet), so the buffer can grow in place.
    const ptr = { value: 0n };
    call('cuMemAddressReserve', [ptr, 2 * size, 0, 0n, 0], cu.cuMemAddressReserve(ptr, 2 * size, 0, 0n, 0));
    // 2. Physical memory behind a handle, no address. 3. Bind it. 4. Grant the device access.
    const h1 = { value: 0n };
    call('cuMemCreate', [h1, size, prop, 0], cu.cuMemCreate(h1, size, prop, 0));
    call('cuMemMap', [ptr.value, size, 0, h1.value, 0], cu.cuMemMap(ptr.value, size, 0, h1.value, 0));
    const rw: CUmemAccessDesc[] = [
      {
        location: { type: C.CU_MEM_LOCATION_TYPE_DEVICE, id: dev.value },
        flags: C.CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
      },
    ];
    call('cuMemSetAccess', [ptr.value, size, rw, 1], cu.cuMemSetAccess(ptr.value, size, rw, 1));

    // Real bytes: host -> device -> host.
    const pattern = Uint8Array.from({ length: 8192 }, (_, i) => (i * 31 + 7) & 0xff);
    call(
      'cuMemcpyHtoD',
      [ptr.value, pattern, pattern.length],
      cu.cuMemcpyHtoD(ptr.value, pattern, pattern.length),
    );
    const back = new Uint8Array(pattern.length);
    call('cuMemcpyDtoH', [back, ptr.value, back.length], cu.cuMemcpyDtoH(back, ptr.value, back.length));
    check(
      'the bytes read back equal the bytes written',
      back.every((b, i) => b === pattern[i]),
    );

    // Grow in place: a second handle mapped right after the first. The pointer stays the same.
    const h2 = { value: 0n };
    const tail = ptr.value + BigInt(size);
    call('cuMemCreate', [h2, size, prop, 0], cu.cuMemCreate(h2, size, prop, 0));
    call('cuMemMap', [tail, size, 0, h2.value, 0], cu.cuMemMap(tail, size, 0, h2.value, 0));
    call('cuMemSetAccess', [tail, size, rw, 1], cu.cuMemSetAccess(tail, size, rw, 1));
    // One copy across the boundary between the two handles.
    const across = ptr.value + BigInt(size - 4096);
    call('cuMemcpyDtoD', [across, ptr.value, 8192], cu.cuMemcpyDtoD(across, ptr.value, 8192));
    const grown = new Uint8Array(8192);
    call('cuMemcpyDtoH', [grown, across, 8192], cu.cuMemcpyDtoH(grown, across, 8192));
    check(
      'a copy across the two handles is intact',
      grown.every((b, i) => b === pattern[i]),
    );
    const start = new Uint8Array(16);
    call('cuMemcpyDtoH', [start, ptr.value, 16], cu.cuMemcpyDtoH(start, ptr.value, 16));
    check(
      'the same pointer still shows the first bytes',
      start.every((b, i) => b === pattern[i]),
    );

    // Undo, in reverse: one unmap covers both mappings.
    call('cuMemUnmap', [ptr.value, 2 * size], cu.cuMemUnmap(ptr.value, 2 * size));
    call('cuMemRelease', [h1.value], cu.cuMemRelease(h1.value));
    call('cuMemRelease', [h2.value], cu.cuMemRelease(h2.value));
    call('cuMemAddressFree', [ptr.value, 2 * size], cu.cuMemAddressFree(ptr.value, 2 * size));
    call('cuDevicePrimaryCtxRelease', [dev.value], cu.cuDevicePrimaryCtxRelease(dev.value));
    const left = cu.runtime.stats();
    check('nothing is left behind', left.mappings + left.handles + left.reservations === 0);
    print(ok ? 'CUDA sequence: every call returned CUDA_SUCCESS' : 'CUDA sequence: FAILED');
    return ok;
  } finally {
    cu.dispose();
  }
}

/** A C-ish rendering of an argument: out-parameters as &value, pointers in hex. */
function show(v: unknown): string {
  if (typeof v === 'bigint') return `0x${v.toString(16)}`;
  if (typeof v === 'number') return String(v);
  return formatValue(v);
}
