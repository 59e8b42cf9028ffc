import type { Backend } from '../backend/backend.js';
import type { AddressBook } from './address-book.js';
import type { AllocationBook } from './allocations.js';
import { vmmError } from './errors.js';
import type { Mapper } from './mapper.js';
import { HANDLE_REFS, type PhysicalAllocation, type Reservation } from './objects.js';
import type { MallocOptions } from './runtime.js';
import type { SharingBook } from './sharing.js';
import { Transaction } from './transaction.js';
import { Access } from './types.js';

/**
 * The one-step path: device memory allocated, freed and shared in one call,
 * as cuMemAlloc, cuMemFree and the IPC calls do. Each is core's own steps
 * (reserve, create, map, grant) taken privately as one Transaction, so an
 * observer sees the one call its caller made (Note [Runtime observers]). Its
 * reservations have origin 'malloc': the VMM calls refuse them, and their
 * memory has no handle for the caller. The Runtime checks liveness and the
 * device first.
 *
 * Note [One-step sharing]: memory from malloc has no handle for the
 * caller (retain and exportShareable refuse it), yet every vendor shares
 * it: ACL's aclrtIpcMemGetExportKey / aclrtIpcMemImportByKey, CUDA's
 * cuIpcGetMemHandle / cuIpcOpenMemHandle, HIP's hipIpcGetMemHandle. So
 * core shares it itself, through the same backend tokens as
 * exportShareable (Note [Tokens in the Backend]), and a backend that can
 * carry tokens between real processes carries these too:
 *  - exportMalloc(va) exports the allocation behind a one-step range as a
 *    token; mfree withdraws it (as freeing any exporter's memory does),
 *    unshare(token) withdraws it earlier;
 *  - importMalloc(token, device) imports the token, reserves a range of its
 *    size, maps it and grants `device` read-write, as one transaction (a
 *    failed step undoes the import too); the result is a one-step range of
 *    this process, freed with mfree, which drops only this process's hold.
 * The memory goes when its last holder lets go: the exporter's mapping,
 * each importer's mapping, and the token until it is withdrawn.
 */
export class OneStepPath {
  constructor(
    readonly backend: Backend,
    readonly book: AddressBook,
    readonly allocations: AllocationBook,
    readonly sharing: SharingBook,
    readonly mapper: Mapper,
    readonly report: (message: string, error?: unknown) => void,
    /** Runs a step whose failure is reported, not thrown (Runtime.quietly). */
    readonly quietly: (step: () => void) => void,
  ) {}

  /** Reserve, create, map and grant `device` read-write, `size` a multiple of the granularity. */
  malloc(device: number, size: number, options: MallocOptions): Reservation {
    return Transaction.run(this.report, (tx) => {
      const r = this.book.reserve(size, 0, options.hint ?? 0, 'malloc', true);
      tx.undo(() => this.book.free(r));
      const handleTypes = options.handleTypes ?? 0;
      const props = { location: { type: 'device', id: device }, handleTypes, uncached: false } as const;
      const a = this.allocations.create(size, props, 'malloc');
      tx.undo(() => this.allocations.release(a));
      this.#grant(tx, r, a, device);
      return r;
    });
  }

  /** Free the one-step allocation at base `va`. */
  mfree(va: number): void {
    const r = this.book.reservations.get(va);
    if (r === undefined || r.origin !== 'malloc') throw vmmError('not-reserved', 'not a one-step allocation');
    const m = this.book.mappings.get(va);
    if (m !== undefined) this.mapper.unmapOne(m);
    // Note [Points of no return]: the memory is gone; the address space is freed now or at dispose.
    try {
      this.book.free(r);
    } catch (e) {
      if (m === undefined) throw e;
      this.report('mfree could not free the address range; it stays reserved until dispose', e);
    }
  }

  /** Share the memory of the one-step allocation at base `va` as a token. */
  exportMalloc(va: number, checkPid: boolean): number {
    const r = this.book.reservations.get(va);
    const m = r?.origin === 'malloc' ? this.book.mappings.get(va) : undefined;
    if (m === undefined)
      throw vmmError('not-reserved', `0x${va.toString(16)} is not the start of a one-step allocation`);
    return this.sharing.share(m.allocation, checkPid);
  }

  /** Import a token as a one-step allocation `device` may read and write. */
  importMalloc(token: number, device: number): Reservation {
    return Transaction.run(this.report, (tx) => {
      const imported = this.backend.importShareable(token);
      const { size } = imported;
      if (size === undefined) {
        this.quietly(() => this.backend.release(imported.handle));
        throw vmmError('not-supported', `the backend cannot tell the size of token ${token}'s memory`);
      }
      const a = this.allocations.adopt(imported.handle, size, imported.props, 'malloc');
      tx.undo(() => this.allocations.release(a));
      const r = this.book.reserve(size, 0, 0, 'malloc');
      tx.undo(() => this.book.free(r));
      this.#grant(tx, r, a, device);
      return r;
    });
  }

  /** The last steps of a one-step allocation: map all of `r` to `a`, grant `device` read-write. */
  #grant(tx: Transaction, r: Reservation, a: PhysicalAllocation, device: number): void {
    const m = this.mapper.map(r.base, r.size, a, 0, r);
    tx.undo(() => {
      this.backend.unmap(m.va, m.size);
      this.book.forget(m);
    });
    this.mapper.grant(m, m.end, [{ device, access: Access.ReadWrite }]);
    // The mapping alone holds the memory now: its handle is not the caller's.
    a[HANDLE_REFS] = 0;
  }
}
