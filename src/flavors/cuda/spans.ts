/** CUDA mappings that run past their reservation's end, held in core as several pieces. */
import type { Mapping, PhysicalAllocation, Reservation } from '../../core/objects.js';
import type { Runtime } from '../../core/runtime.js';
import { Transaction } from '../../core/transaction.js';
import { isMultipleOf } from '../../util/integers.js';
import type { VendorCodes } from '../common/error-table.js';
import * as C from './constants.js';

/** One CUDA mapping: its core pieces in address order, and the reservations made for its free VA. */
export interface Span {
  readonly pieces: Mapping[];
  readonly hidden: readonly Reservation[];
}

/**
 * Note [Mappings past a reservation's end]
 * The documentation asks that the whole range be a reservation made by
 * cuMemAddressReserve (CUDA driver API, cuMemMap); the H200 checks less. Its
 * cuMemMap checks only that a mapping starts inside a reservation:
 * it may run past that reservation's end, into free VA or into the next
 * reservation, and the bytes there are usable after setAccess
 * (map.pastReservationEnd, map.pastReservationEndIntoFreedRange,
 * map.pastReservationEndIntoNextReservation, map.spanningTwoReservations).
 * Neither the map's size nor where in the reservation it starts matters: 4 or
 * 8 MiB into a 2 MiB reservation, at its start or inside a larger one, map
 * where the tail is free (map.overReservation*). The rule, in full: every
 * granule past the end must be either unmapped in another reservation or
 * free address space, held by no reservation and no one else. A tail that
 * runs into address space taken otherwise is refused with
 * CUDA_ERROR_INVALID_VALUE: into a mapping, cuMemAlloc memory, or the
 * driver's own memory. The last is what a lone 2 MiB reservation meets on
 * the H200: it lands in the start-up heap's 2 MiB hole, and the 72 MiB
 * above the hole is the driver's (map.overReservationLoneAtStart, with
 * tailFree: a hint just past its end is not honoured); in a created
 * context, in its own heap's hole, likewise (startupHeap.createdContextTwoLone:
 * Note [Created contexts' heaps] in the simulator). The simulator
 * places reservations the same way, the driver's memory included (Note
 * [Driver VA placement] in the simulator), so the hidden reservation below
 * cannot be had there and the map is refused as on the H200. So a program
 * that maps past a reservation's end must first make sure of the tail, e.g.
 * reserve more and map inside, or reserve at the start of just-freed VA.
 * Core keeps every mapping inside one reservation (invariant 2 in
 * runtime.ts), so the flavor holds such a CUDA mapping as a span: one core
 * mapping per reservation it crosses, each at its offset into the same
 * handle, with a hidden reservation for any free VA it runs into. Unmap takes
 * a span whole (or refuses, as it refuses to split any mapping), setAccess
 * treats it as one mapping, and the hidden reservations go with it. Making a
 * span is one transaction (Note [Transactions] in core): a step that fails,
 * or free VA the process cannot hold exactly, takes back the pieces and
 * reservations made before it.
 */
export class CudaSpans {
  /** Spans by piece. */
  readonly #spans = new Map<Mapping, Span>();
  /** Reservations made for spans; the program never sees them. */
  readonly #hidden = new Set<Reservation>();

  constructor(
    readonly runtime: Runtime,
    readonly codes: VendorCodes,
  ) {}

  /** No span exists: every CUDA mapping is one core mapping (Note [Core first]). */
  get none(): boolean {
    return this.#spans.size === 0;
  }

  /** The span a core mapping is a piece of. */
  of(m: Mapping): Span | undefined {
    return this.#spans.size === 0 ? undefined : this.#spans.get(m);
  }

  /** A reservation the flavor made to hold part of a span. */
  isHidden(r: Reservation): boolean {
    return this.#hidden.size !== 0 && this.#hidden.has(r);
  }

  /** Map `a` at [va, va + n), which runs past the end of the reservation holding va (the Note); a CUresult. */
  mapAcross(va: number, n: number, a: PhysicalAllocation): number {
    const g = this.runtime.vaGranularity;
    if (!isMultipleOf(va, g)) return C.CUDA_ERROR_INVALID_VALUE;
    const end = va + n;
    // Plan the pieces before changing anything: one per reservation crossed, one per free gap.
    const plan: { at: number; size: number; reservation: Reservation | undefined }[] = [];
    for (let at = va; at < end; ) {
      const r = this.runtime.reservationContaining(at);
      let stop: number;
      if (r !== undefined) {
        // Another span's hidden range is mapped already: an overlap, as in map.overlapPartial.
        if (r.origin !== 'vmm' || this.isHidden(r)) return C.CUDA_ERROR_INVALID_VALUE;
        stop = Math.min(r.end, end);
      } else {
        stop = at + g;
        while (stop < end && this.runtime.reservationContaining(stop) === undefined) stop += g;
      }
      plan.push({ at, size: stop - at, reservation: r });
      at = stop;
    }
    const pieces: Mapping[] = [];
    const hidden: Reservation[] = [];
    const tx = new Transaction(this.codes.report);
    try {
      for (const p of plan) {
        if (p.reservation === undefined) {
          const r = this.runtime.reserve(p.size, { hint: p.at, exact: true });
          tx.undo(() => this.runtime.free(r));
          // The free VA lies outside what the simulated process can reserve there.
          if (r.base !== p.at) {
            tx.rollback();
            return C.CUDA_ERROR_INVALID_VALUE;
          }
          hidden.push(r);
        }
        const m = this.runtime.map(p.at, p.size, a, p.at - va);
        tx.undo(() => this.runtime.unmap(m.va, m.size));
        pieces.push(m);
      }
    } catch (e) {
      tx.rollback();
      return this.codes.code(e);
    }
    const span: Span = { pieces, hidden };
    for (const m of pieces) this.#spans.set(m, span);
    for (const r of hidden) this.#hidden.add(r);
    return C.CUDA_SUCCESS;
  }

  /** A piece core mapped again (an undone unmap) takes the old one's place in its span. */
  replace(old: Mapping, again: Mapping): void {
    const span = this.of(old);
    if (span === undefined) return;
    span.pieces[span.pieces.indexOf(old)] = again;
    this.#spans.delete(old);
    this.#spans.set(again, span);
  }

  /** The mappings given, each with every other piece of its span, in address order. */
  withWholeSpans(mappings: readonly Mapping[]): Mapping[] {
    if (this.#spans.size === 0) return mappings as Mapping[];
    const out: Mapping[] = [];
    const seen = new Set<Span>();
    for (const m of mappings) {
      const span = this.#spans.get(m);
      if (span === undefined) out.push(m);
      else if (!seen.has(span)) {
        seen.add(span);
        out.push(...span.pieces);
      }
    }
    return out.sort((x, y) => x.va - y.va);
  }

  /**
   * After unmapping: drop the spans of these mappings and give back their
   * hidden reservations. Freeing address space comes last and cannot be
   * undone (Note [Points of no return] in core): a failure is reported.
   */
  forget(unmapped: readonly Mapping[]): void {
    if (this.#spans.size === 0) return;
    for (const m of unmapped) {
      const span = this.#spans.get(m);
      if (span === undefined) continue;
      for (const p of span.pieces) this.#spans.delete(p);
      for (const r of span.hidden) {
        this.#hidden.delete(r);
        try {
          this.runtime.free(r);
        } catch (e) {
          this.codes.report('could not free the hidden reservation of a span', e);
        }
      }
    }
  }
}
