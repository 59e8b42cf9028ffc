/** The value types of the Backend contract (access, locations, allocation properties, device facts), shared by core, the backends and the flavors; core re-exports them (src/core/types.ts). */

/** Access a device has to a mapping: bit 1 read, bit 2 write (CUDA's and HIP's numbering). */
export const Access = { None: 0, Read: 1, ReadWrite: 3 } as const;
export type Access = (typeof Access)[keyof typeof Access];

export function isAccess(v: number): v is Access {
  return v === 0 || v === 1 || v === 3;
}

/**
 * Note [Access bits]: every device's access to a mapping is packed into one
 * integer, two bits per device ordinal, so a mapping or page-table entry
 * carries no per-device array. That bounds a machine at MAX_DEVICES.
 */
export const MAX_DEVICES = 16;

export function accessIn(bits: number, device: number): Access {
  return ((bits >>> (device << 1)) & 3) as Access;
}

export function withAccess(bits: number, device: number, access: Access): number {
  const shift = device << 1;
  return (bits & ~(3 << shift)) | (access << shift);
}

/** Where physical memory lives. Host memory is still reached through device page tables. */
export interface Location {
  readonly type: 'device' | 'host';
  /** Device ordinal for 'device'; NUMA node (usually 0) for 'host'. */
  readonly id: number;
}

/** Shareable handle types a physical allocation may be exported as (bit set). */
export const HandleType = { None: 0, PosixFd: 1, Fabric: 8 } as const;

export interface AllocationProperties {
  readonly location: Location;
  /** Bit set of HandleType values the allocation may be exported as. */
  readonly handleTypes: number;
  /** Uncached (fine-grained) memory, as HIP's hipMemAllocationTypeUncached asks for. */
  readonly uncached: boolean;
}

export interface DeviceInfo {
  readonly ordinal: number;
  readonly name: string;
  readonly totalMemory: number;
  /** Smallest size/alignment VMM accepts on this device. */
  readonly minimumGranularity: number;
  /** Size/alignment the device performs best with. */
  readonly recommendedGranularity: number;
  /**
   * Every device attribute the vendor's driver answered, by the driver's own
   * attribute number (CUDA: CUdevice_attribute -> cuDeviceGetAttribute's
   * value), read once when a real backend opens the device. A simulated
   * device has them where its spec recorded a real part's (the H200); the
   * front ends answer from them (Note [Device attributes]).
   */
  readonly driverAttributes?: ReadonlyMap<number, number>;
  /** The part's figures as its vendor publishes them, where no driver record gives them (a simulated MI300X). */
  readonly published?: PublishedFacts;
  /**
   * The devices (ordinals) whose memory this one can reach directly, as the
   * driver says (cuDeviceCanAccessPeer); never the device itself. Absent on
   * simulated devices, where every device can reach every other (Note [Peer access]).
   */
  readonly peers?: readonly number[];
}

/** A part's compute units and compute capability (AMD: its LLVM target's major and minor), in hipDeviceProp_t's words. */
export interface PublishedFacts {
  readonly multiProcessorCount: number;
  readonly major: number;
  readonly minor: number;
}

export interface MemoryInfo {
  readonly free: number;
  readonly total: number;
}
