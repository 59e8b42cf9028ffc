/**
 * What a flavour shows a debugger: its vendor's layer table (the trace in the
 * vendor's own layers and function names, Note [Vendor layers] in
 * core/trace.ts) and the process state in the vendor's object model. Each
 * flavour's layers.ts fills one in; the CLI's trace --break and inspect
 * print through it.
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
export declare function frameOf(layer: string): (name: string) => VendorFrame;
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
export declare function renderState(d: RuntimeDescription, words: StateWords): string;
export declare function hex(n: number | bigint): string;
/** Where memory lives, in plain words. */
export declare function placeOf(location: AllocationInfo['location']): string;
/** The machine's devices, named once each: "1 x MI300X". */
export declare function devicesOf(d: RuntimeDescription): string;
/**
 * A vendor's table for a process whose backend is the real NVIDIA driver:
 * the vendor's upper layers stay, while whatever the table said about the
 * layers below (backend primitives, simulated device events) gives way to the
 * libcuda call that really runs. On the simulator the table is used as is.
 */
export declare function layersFor(table: VendorLayers, backend: 'sim' | 'cuda'): VendorLayers;
