/**
 * Note [Fast cycle calls]
 *
 * The 2 MiB VMM cycle (reserve, create, map, setAccess, unmap, release, free)
 * is seven driver calls, and koffi costs about 60 to 90 ns a call before the
 * driver runs: on the H200 machine, with the caches cold after each driver
 * call, raw koffi alone was 3.4% over native C (bench/results/h200-paired.json
 * of 2026-12-02 02:00 UTC, in git history at 1036e5f), more than issue 17's
 * 1.05x left for all of vmmkit.
 * An ordinary addon does not help: a hand-written N-API binding of the same
 * seven calls cost within 15% of koffi here, since both pay V8's API callback
 * path. V8's fast API calls do not: optimised JavaScript calls the C function
 * directly, like a call between two C functions, and the seven calls cost
 * about 30 ns together (scratch measurements on this project's 2-core
 * machine: koffi 430 to 690 ns a cycle, fast calls 29 to 46). On the H200
 * the raw fast calls are 1.004 of native C where koffi's are 1.039, in the
 * same processes (bench/results/h200-paired.json).
 *
 * So native/cycle-calls.cc binds the seven functions (their addresses taken
 * from koffi, which loaded libcuda: one loader, one list of driver functions,
 * DRIVER_API) as fast calls. A fast call takes only numbers, so the three
 * calls with a pointer argument read and write fixed places of the binding's
 * `scratch` bytes (SCRATCH) instead of a typed array per argument; the koffi
 * form below lays the same bytes out and hands koffi views of them, so the
 * checked layer (checked.ts) writes a struct and reads an out-parameter the
 * same way over either. Numbers are read as koffi reads them (truncated into
 * int64, so negatives wrap; saturated at its ends; NaN and the infinities 0);
 * a bigint, such as a handle above 2^53, takes the addon's slow path, which
 * reads it whole.
 *
 * Note [Library lifetime]: koffi unloads a library once no handle or
 * function of it is left, and the addon's addresses are no koffi function.
 * So the bound object holds the driver object (its koffi functions, and the
 * library handle its symbolAddress keeps) for as long as it lives; without
 * that, a driver object dropped by its caller (optimised code drops a
 * variable after its last use) let a full collection unmap libcuda under the
 * fast calls, and the next one jumped into nothing
 * (test/backends/cycle-calls.test.ts, "keep the library loaded").
 *
 * The addon is built at install (scripts/build-native.mjs) into
 * build/cycle-calls.node, where a C++ compiler and Node's headers are
 * (Linux; the V8s of Nodes 20, 22 and 24, through the layout facts of Note
 * [Fast call ABI], or a Node that ships v8-fast-api-calls.h). Where it is
 * missing, or `fastCalls: false` asks, the koffi form serves: the same
 * calls, slower.
 *
 * Note [Fast calls in try blocks]: V8 makes a call a fast call only in code
 * TurboFan optimised, and V8 12 (Node 22) not where the call sits inside a
 * try block, its own or one of a function it was inlined into; V8 11.3 (Node
 * 20) and 13.6 (Node 24) do. The front ends catch core's errors around
 * every call (a code, never a throw), so on Node 22 a cycle call is fast only
 * where TurboFan did not inline it into the front end's try, which its
 * inlining budget decides: five of the seven over the libcuda stand-in
 * (cuMemRelease and cuMemAddressFree run through the addon's slow callbacks,
 * which cost about what koffi does); on the H200 six in the median process,
 * five to seven by process (bench/results/node22/h200-paired.json,
 * measured_fast_share); all seven on Nodes 20 and 24
 * (test/backends/cycle-calls.test.ts).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { packagePath } from '../../util/package-path.js';
import type { CudaDriver } from './driver.js';
import type { DriverSymbol } from './driver-api.js';

/** Where the cycle calls' pointer arguments live in `scratch` (byte offsets; cycle-calls.cc agrees). */
export const SCRATCH = {
  /** The out-parameter of cuMemAddressReserve and cuMemCreate: one uint64. */
  out: 0,
  /** cuMemCreate's CUmemAllocationProp (32 bytes). */
  prop: 8,
  /** cuMemSetAccess's one CUmemAccessDesc (12 bytes). */
  desc: 40,
  /** The fast form's count of calls that took the fast path (a uint64); 0 in the koffi form. */
  fastCount: 56,
  bytes: 64,
} as const;

/** The seven calls of the cycle, pointer arguments in `scratch` (SCRATCH); each answers the CUresult. */
export interface CycleCalls {
  readonly scratch: ArrayBuffer;
  cuMemAddressReserve(size: number, alignment: number, addr: number, flags: number): number;
  cuMemCreate(size: number, flags: number): number;
  cuMemMap(ptr: number, size: number, offset: number, handle: number | bigint, flags: number): number;
  /** One descriptor, count 1. */
  cuMemSetAccess(ptr: number, size: number): number;
  cuMemUnmap(ptr: number, size: number): number;
  cuMemRelease(handle: number | bigint): number;
  cuMemAddressFree(ptr: number, size: number): number;
}

/** The order in which the addon's bind takes the functions' addresses. */
export const CYCLE_SYMBOLS = [
  'cuMemAddressReserve',
  'cuMemCreate',
  'cuMemMap',
  'cuMemSetAccess',
  'cuMemUnmap',
  'cuMemRelease',
  'cuMemAddressFree',
] as const satisfies readonly DriverSymbol[];

interface CycleCallsAddon {
  bind(addresses: readonly bigint[], owner: object): CycleCalls;
}

/** The built addon's path: build/ at the package's root (undefined if the root is not found). */
export function cycleCallsAddonPath(): string | undefined {
  return packagePath('build/cycle-calls.node');
}

/** The addon, or why not: loaded on first use (Note [Lazy FFI] in koffi.ts), never for simulator users. */
export function loadCycleCallsAddon(): CycleCallsAddon | string {
  const path = cycleCallsAddonPath();
  if (path === undefined) return "vmmkit's package root was not found";
  if (!existsSync(path)) return `${path} was not built (scripts/build-native.mjs)`;
  try {
    return createRequire(import.meta.url)(path) as CycleCallsAddon;
  } catch (e) {
    return `${path} did not load: ${e instanceof Error ? e.message : String(e)}`;
  }
}

/** The cycle through koffi's functions, over views of one scratch buffer laid out as the fast form's. */
export function koffiCycleCalls(driver: CudaDriver): CycleCalls {
  const scratch = new ArrayBuffer(SCRATCH.bytes);
  const out = new BigUint64Array(scratch, SCRATCH.out, 1);
  const prop = new Uint8Array(scratch, SCRATCH.prop, 32);
  const desc = new Uint8Array(scratch, SCRATCH.desc, 12);
  const d = driver;
  return {
    scratch,
    cuMemAddressReserve: (size, alignment, addr, flags) =>
      d.cuMemAddressReserve(out, size, alignment, addr, flags),
    cuMemCreate: (size, flags) => d.cuMemCreate(out, size, prop, flags),
    cuMemMap: (ptr, size, offset, handle, flags) => d.cuMemMap(ptr, size, offset, handle, flags),
    cuMemSetAccess: (ptr, size) => d.cuMemSetAccess(ptr, size, desc, 1),
    cuMemUnmap: (ptr, size) => d.cuMemUnmap(ptr, size),
    cuMemRelease: (handle) => d.cuMemRelease(handle),
    cuMemAddressFree: (ptr, size) => d.cuMemAddressFree(ptr, size),
  };
}

/**
 * The fast form over these function addresses (CYCLE_SYMBOLS' order), or why
 * not. `owner` is what keeps their library loaded (Note [Library lifetime]).
 */
export function fastCycleCalls(addresses: readonly bigint[], owner: object): CycleCalls | string {
  const addon = loadCycleCallsAddon();
  if (typeof addon === 'string') return addon;
  try {
    return addon.bind(addresses, owner);
  } catch (e) {
    return `the addon refused the addresses: ${e instanceof Error ? e.message : String(e)}`;
  }
}

/** Which form serves a driver's cycle calls, and why the fast one does not where it does not. */
export interface ChosenCycleCalls {
  readonly calls: CycleCalls;
  readonly form: 'fast' | 'koffi';
  readonly why?: string;
}

/**
 * The fast form where the driver is a loaded library (it has symbol
 * addresses) and the addon is there, unless `fast` is false; else koffi's.
 */
export function chooseCycleCalls(driver: CudaDriver, fast = true): ChosenCycleCalls {
  const koffiForm = (why: string): ChosenCycleCalls => ({
    calls: koffiCycleCalls(driver),
    form: 'koffi',
    why,
  });
  if (!fast) return koffiForm('fastCalls: false');
  const address = driver.symbolAddress;
  if (!address) return koffiForm('the driver is no loaded library');
  let addresses: bigint[];
  try {
    addresses = CYCLE_SYMBOLS.map((s) => address(s));
  } catch (e) {
    return koffiForm(`a cycle function's address: ${e instanceof Error ? e.message : String(e)}`);
  }
  const calls = fastCycleCalls(addresses, driver);
  return typeof calls === 'string' ? koffiForm(calls) : { calls, form: 'fast' };
}
