import type { Backend } from '../backend/backend.js';
import type { AddressBook } from './address-book.js';
import type { AllocationBook } from './allocations.js';
import { vmmError } from './errors.js';
import { checkHostReachable, grantHostAccess } from './host-access.js';
import { ACCESS_BITS, Mapping, type PhysicalAllocation, type Reservation } from './objects.js';
import type { AccessDescriptor } from './runtime.js';
import type { StreamTable } from './streams.js';
import { Transaction } from './transaction.js';
import { Access, type DeviceInfo, isAccess, withAccess } from './types.js';

/**
 * The steps that map, unmap and set access in one process, for the Runtime,
 * which checks the arguments first. Each backend call is booked
 * (AddressBook) only once it succeeded; an operation of several calls runs
 * as a Transaction (Note [Transactions]), and memory is released last (Note
 * [Points of no return]), so a mapping's access bits stay what the
 * backend's page tables grant (invariant 4) and an allocation's memory goes
 * exactly when its last reference does (invariant 3).
 */
export class Mapper {
  constructor(
    readonly backend: Backend,
    readonly devices: readonly DeviceInfo[],
    readonly book: AddressBook,
    readonly allocations: AllocationBook,
    readonly streams: StreamTable,
    readonly report: (message: string, error?: unknown) => void,
  ) {}

  /** Map [va, va + size) of `a` from `offset` inside `r`, if nothing there is mapped yet. */
  map(va: number, size: number, a: PhysicalAllocation, offset: number, r: Reservation): Mapping {
    if (this.book.mappings.intersects(va, va + size)) {
      throw vmmError('overlap', `[0x${va.toString(16)}, +${size}) is already mapped in part`);
    }
    this.backend.map(va, size, a.backendHandle, offset);
    const m = new Mapping(va, size, a, offset, r);
    this.book.remember(m);
    return m;
  }

  /** Unmap one mapping, releasing its memory if that was the last reference; queued work finishes first. */
  unmapOne(m: Mapping): void {
    if (this.streams.size > 0) this.backend.synchronizeDevice(-1);
    this.backend.unmap(m.va, m.size);
    this.book.forget(m);
    const a = m.allocation;
    if (a.refCount !== 0) return;
    // The last reference went: releasing is the step that can fail, and then the unmap is undone.
    Transaction.run(this.report, (tx) => {
      tx.undo(() => this.#restore([m]));
      this.allocations.giveBack(a);
    });
  }

  /** Unmap several mappings: all unmaps first, releases last (Note [Points of no return]). */
  unmapAll(mappings: readonly Mapping[]): void {
    if (this.streams.size > 0) this.backend.synchronizeDevice(-1);
    const unused = Transaction.run(this.report, (tx) => {
      for (const m of mappings) {
        this.backend.unmap(m.va, m.size);
        tx.undo(() => this.#remap(m));
      }
      for (const m of mappings) this.book.forget(m);
      tx.undo(() => {
        for (const m of mappings) this.book.remember(m);
      });
      const unused = [...new Set(mappings.map((m) => m.allocation))].filter((a) => a.refCount === 0);
      // The first release is the point of no return: if it fails, nothing has been given back yet.
      if (unused.length > 0) this.allocations.giveBack(unused[0]);
      return unused;
    });
    for (let i = 1; i < unused.length; i++) {
      try {
        this.allocations.giveBack(unused[i]);
      } catch (e) {
        this.allocations.holdUnreleased(unused[i]);
        this.report('an unmap could not release memory; it stays held until dispose', e);
      }
    }
  }

  /** Put unmapped mappings back, in the books and the backend (undo of an unmap). */
  #restore(mappings: readonly Mapping[]): void {
    for (const m of mappings) this.book.remember(m);
    for (const m of mappings) this.#remap(m);
  }

  /** Redo a mapping in the backend with the access it had (undo of an unmap). */
  #remap(m: Mapping): void {
    this.backend.map(m.va, m.size, m.allocation.backendHandle, m.offset);
    const bits = m[ACCESS_BITS];
    for (let d = 0; d < this.devices.length && bits !== 0; d++) {
      const access = m.accessOf(d);
      if (access !== Access.None) this.backend.setAccess(m.va, m.size, d, access);
    }
  }

  /** setAccess with the CPU's grant: the CPU's first, given back if a device's then fails. */
  grantWithHost(va: number, size: number, descriptors: readonly AccessDescriptor[], host: Access): void {
    if (!isAccess(host)) throw vmmError('invalid-value', `access flags ${host}`);
    const mappings = this.book.wholeMappings(va, size);
    for (const m of mappings) {
      checkVmm(m);
      checkHostReachable(m);
    }
    Transaction.run(this.report, (tx) => {
      grantHostAccess(tx, this.backend, mappings, va, size, host);
      if (descriptors.length > 0) this.grant(mappings[0], va + size, descriptors);
    });
  }

  /** Set access on the contiguous live mappings from `first` up to `end`; all or nothing. */
  grant(first: Mapping, end: number, descriptors: readonly AccessDescriptor[]): void {
    const va = first.va;
    if (descriptors.length === 1) {
      this.backend.setAccess(va, end - va, descriptors[0].device, descriptors[0].access);
    } else {
      Transaction.run(this.report, (tx) => {
        for (const d of descriptors) {
          this.backend.setAccess(va, end - va, d.device, d.access);
          tx.undo(() => this.#restoreAccess(first, end, d.device));
        }
      });
    }
    // Step by end address, so the mapping after the range is never touched.
    const mappings = this.book.mappings;
    for (let m = first; ; m = mappings.get(m.end)!) {
      for (const d of descriptors) m[ACCESS_BITS] = withAccess(m[ACCESS_BITS], d.device, d.access);
      if (m.end >= end) break;
    }
  }

  /** Give `device` back, mapping by mapping, the access the books say it has. */
  #restoreAccess(first: Mapping, end: number, device: number): void {
    const mappings = this.book.mappings;
    for (let m = mappings.get(first.va); m !== undefined && m.va < end; m = mappings.get(m.end)) {
      this.backend.setAccess(m.va, m.size, device, m.accessOf(device));
    }
  }
}

/** VMM calls never touch one-step allocations (their memory has no handle to unmap or grant through). */
export function checkVmm(m: Mapping): void {
  if (m.reservation.origin === 'malloc')
    throw vmmError('not-mapped', `0x${m.va.toString(16)} is a one-step allocation, not a VMM mapping`);
}
