import type { AddressBook } from './address-book.js';
import type { AllocationBook } from './allocations.js';
import type { PhysicalAllocation, Reservation } from './objects.js';
import type { Access, DeviceInfo } from './types.js';

/** What `describe()` gives: a process's VMM state as plain data. */
export interface RuntimeDescription {
  readonly pid: number;
  readonly devices: readonly DeviceInfo[];
  readonly reservations: readonly {
    readonly base: number;
    readonly size: number;
    readonly origin: Reservation['origin'];
    readonly mappings: readonly {
      readonly va: number;
      readonly size: number;
      readonly offset: number;
      readonly handle: number;
      /** Access of each device, by ordinal. */
      readonly access: readonly Access[];
    }[];
  }[];
  readonly allocations: readonly {
    readonly handle: number;
    readonly size: number;
    readonly location: PhysicalAllocation['props']['location'];
    readonly origin: PhysicalAllocation['origin'];
    readonly handleRefs: number;
    readonly mapRefs: number;
    /** Exported fds still open and tokens still shared. */
    readonly exports: number;
  }[];
}

/** A process's books as a RuntimeDescription (Runtime.describe). */
export function describeBooks(
  pid: number,
  devices: readonly DeviceInfo[],
  book: AddressBook,
  allocations: AllocationBook,
): RuntimeDescription {
  const reservations = [...book.reservations.values()].map((r) => ({
    base: r.base,
    size: r.size,
    origin: r.origin,
    mappings: book.mappingsIn(r.base, r.size).map((m) => ({
      va: m.va,
      size: m.size,
      offset: m.offset,
      handle: m.allocation.id,
      access: devices.map((d) => m.accessOf(d.ordinal)),
    })),
  }));
  const held = [...allocations.values()].map((a) => ({
    handle: a.id,
    size: a.size,
    location: a.props.location,
    origin: a.origin,
    handleRefs: a.handleRefs,
    mapRefs: a.mapRefs,
    exports: a.exports,
  }));
  return { pid, devices, reservations, allocations: held };
}
