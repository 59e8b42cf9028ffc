import { formatValue, type Tracer } from '../../core/trace.js';
import { createHip } from '../../entry/processes.js';
import * as C from '../../flavors/hip/constants.js';
import type { hipMemAccessDesc, hipMemAllocationProp } from '../../flavors/hip/hip.js';

/**
 * Seed 1, section 6: the four-step VMM sequence on a simulated MI300X,
 * with a real task in the middle (a pattern written and read back through
 * the mapping) and a grow-in-place step (a second handle mapped right after
 * the first, same pointer). One line per call; the caller prints the trace.
 * True when every call succeeded and every check held.
 */
export function hipDemo(print: (line: string) => void, tracer: Tracer): boolean {
  const hip = createHip({ tracer });
  let failed = false;
  const call = (name: string, args: readonly unknown[], code: number): number => {
    // The name comes from the table, not hipGetErrorName, so the trace holds only the sequence's calls.
    print(`${name}(${args.map(show).join(', ')}) -> ${C.HIP_ERRORS.get(code)?.[0] ?? code}`);
    if (code !== C.hipSuccess) failed = true;
    return code;
  };
  try {
    const count = { value: 0 };
    call('hipGetDeviceCount', [count], hip.hipGetDeviceCount(count));
    call('hipSetDevice', [0], hip.hipSetDevice(0));

    const prop: hipMemAllocationProp = {
      type: C.hipMemAllocationTypePinned,
      requestedHandleTypes: C.hipMemHandleTypeNone,
      location: { type: C.hipMemLocationTypeDevice, id: 0 },
    };
    const granularity = { value: 0 };
    const option = C.hipMemAllocationGranularityRecommended;
    call(
      'hipMemGetAllocationGranularity',
      [granularity, prop, option],
      hip.hipMemGetAllocationGranularity(granularity, prop, option),
    );
    const size = granularity.value;

    // (1) reserve room for two chunks, so the buffer can grow in place.
    const ptr = { value: 0n };
    call(
      'hipMemAddressReserve',
      [ptr, 2 * size, 0, 0, 0],
      hip.hipMemAddressReserve(ptr, 2 * size, 0, null, 0),
    );
    // (2) physical memory, (3) bind, (4) grant access.
    const h1 = { value: 0n };
    call('hipMemCreate', [h1, size, prop, 0], hip.hipMemCreate(h1, size, prop, 0));
    call('hipMemMap', [ptr.value, size, 0, h1.value, 0], hip.hipMemMap(ptr.value, size, 0, h1.value, 0));
    const desc: hipMemAccessDesc[] = [
      { location: { type: C.hipMemLocationTypeDevice, id: 0 }, flags: C.hipMemAccessFlagsProtReadWrite },
    ];
    call('hipMemSetAccess', [ptr.value, size, desc, 1], hip.hipMemSetAccess(ptr.value, size, desc, 1));

    // Use it: a pattern host -> device -> host.
    const pattern = Uint8Array.from({ length: 4096 }, (_, i) => (i * 7 + 1) & 0xff);
    call(
      'hipMemcpy',
      [ptr.value, pattern, pattern.length, 'hipMemcpyHostToDevice'],
      hip.hipMemcpy(ptr.value, pattern, pattern.length, C.hipMemcpyHostToDevice),
    );
    const back = new Uint8Array(pattern.length);
    call(
      'hipMemcpy',
      [back, ptr.value, back.length, 'hipMemcpyDeviceToHost'],
      hip.hipMemcpy(back, ptr.value, back.length, C.hipMemcpyDeviceToHost),
    );
    const same = back.every((b, i) => b === pattern[i]);
    print(
      `  check: ${same ? 'the bytes read back equal the pattern' : 'MISMATCH between written and read bytes'}`,
    );
    if (!same) failed = true;

    // Grow in place: a second handle right after the first; the pointer does not change.
    const h2 = { value: 0n };
    const tail = ptr.value + BigInt(size);
    call('hipMemCreate', [h2, size, prop, 0], hip.hipMemCreate(h2, size, prop, 0));
    call('hipMemMap', [tail, size, 0, h2.value, 0], hip.hipMemMap(tail, size, 0, h2.value, 0));
    call(
      'hipMemSetAccess',
      [ptr.value, 2 * size, desc, 1],
      hip.hipMemSetAccess(ptr.value, 2 * size, desc, 1),
    );
    const kept = new Uint8Array(16);
    call(
      'hipMemcpy',
      [kept, ptr.value, kept.length, 'hipMemcpyDeviceToHost'],
      hip.hipMemcpy(kept, ptr.value, kept.length, C.hipMemcpyDeviceToHost),
    );
    const grown = kept.every((b, i) => b === pattern[i]);
    print(
      `  check: ${grown ? 'after growing, the same pointer still shows the pattern' : 'MISMATCH after growing'}`,
    );
    if (!grown) failed = true;

    // Undo, in reverse.
    call('hipMemUnmap', [ptr.value, 2 * size], hip.hipMemUnmap(ptr.value, 2 * size));
    call('hipMemRelease', [h1.value], hip.hipMemRelease(h1.value));
    call('hipMemRelease', [h2.value], hip.hipMemRelease(h2.value));
    call('hipMemAddressFree', [ptr.value, 2 * size], hip.hipMemAddressFree(ptr.value, 2 * size));
    print(failed ? 'HIP sequence: FAILED' : 'HIP sequence: every call returned hipSuccess');
    return !failed;
  } finally {
    hip.dispose();
  }
}

/** A C-ish rendering of an argument: out-parameters as &value, pointers in hex. */
function show(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'bigint') return `0x${v.toString(16)}`;
  if (typeof v === 'number') return String(v);
  return formatValue(v);
}
