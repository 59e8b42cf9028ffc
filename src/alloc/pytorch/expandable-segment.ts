import { isVmmError } from '../../core/errors.js';
import type { PhysicalAllocation, Reservation } from '../../core/objects.js';
import type { Runtime } from '../../core/runtime.js';
import { Access } from '../../core/types.js';
import { transaction } from '../transactions.js';

/**
 * PyTorch's ExpandableSegment (docs/pytorch-allocators.md E2-E5, E7): one reserved
 * virtual range per (pool, stream), about 1.125 times the device's memory,
 * filled with pages of one size (2 MiB for the small pool, 20 MiB for the
 * large one), each page its own physical allocation.
 *
 * This class is the driver side only: which pages are mapped, and the
 * calls that map and unmap them. Which bytes are free or in use is the
 * allocator's business (blocks in its pools).
 */
export class ExpandableSegment {
  /** The page mapped at each index, undefined where unmapped (PyTorch's handles_). */
  readonly #pages: (PhysicalAllocation | undefined)[] = [];
  #mappedSize = 0;

  private constructor(
    readonly runtime: Runtime,
    readonly device: number,
    readonly stream: number,
    readonly pageSize: number,
    readonly reservation: Reservation,
  ) {}

  /**
   * Reserve the range: pageSize * ceil((total + total / 8) / pageSize) bytes
   * (E3), at the driver's default alignment.
   */
  static reserve(runtime: Runtime, device: number, stream: number, pageSize: number): ExpandableSegment {
    const total = runtime.device(device).totalMemory;
    const pages = Math.ceil((total + Math.floor(total / 8)) / pageSize);
    return new ExpandableSegment(runtime, device, stream, pageSize, runtime.reserve(pages * pageSize));
  }

  get base(): number {
    return this.reservation.base;
  }

  get size(): number {
    return this.reservation.size;
  }

  get end(): number {
    return this.reservation.end;
  }

  /** Bytes of pages mapped now. */
  get mappedSize(): number {
    return this.#mappedSize;
  }

  /** Index of the page holding `ptr` (segmentLeft). */
  pageLeft(ptr: number): number {
    return Math.floor((ptr - this.base) / this.pageSize);
  }

  /** Index of the first page starting at or after `ptr` (segmentRight). */
  pageRight(ptr: number): number {
    return Math.ceil((ptr - this.base) / this.pageSize);
  }

  pageAddress(index: number): number {
    return this.base + index * this.pageSize;
  }

  /**
   * Map pages [begin, end): create every page, map every page, then grant
   * the device read-write over the range in one setAccess (E5), the order
   * PyTorch's map() uses. All or nothing (a Transaction): on a failure the
   * pages made so far are unmapped and released. Returns false when
   * creating a page ran out of memory (PyTorch's OOM path); any other
   * failure is thrown.
   */
  mapPages(begin: number, end: number): boolean {
    const rt = this.runtime;
    const created: PhysicalAllocation[] = [];
    try {
      transaction(rt, (tx) => {
        for (let i = begin; i < end; i++) {
          const a = rt.create(this.pageSize, {
            location: { type: 'device', id: this.device },
            handleTypes: 0,
            uncached: false,
          });
          tx.undo(() => rt.release(a));
          created.push(a);
        }
        for (let i = begin; i < end; i++) {
          const va = this.pageAddress(i);
          rt.map(va, this.pageSize, created[i - begin]);
          tx.undo(() => rt.unmap(va, this.pageSize));
        }
        rt.setAccess(this.pageAddress(begin), (end - begin) * this.pageSize, this.#readWrite());
      });
    } catch (e) {
      if (isVmmError(e) && e.kind === 'out-of-memory' && created.length < end - begin) return false;
      throw e;
    }
    for (let i = begin; i < end; i++) this.#pages[i] = created[i - begin];
    this.#mappedSize += (end - begin) * this.pageSize;
    return true;
  }

  /** Take back pages this request mapped moments ago (a later step of it failed). Never throws. */
  undoPages(begin: number, end: number): void {
    const rt = this.runtime;
    for (let i = begin; i < end; i++) {
      const a = this.#pages[i];
      if (a === undefined) continue;
      rt.quietly(() => rt.unmap(this.pageAddress(i), this.pageSize));
      rt.quietly(() => rt.release(a));
      this.#pages[i] = undefined;
      this.#mappedSize -= this.pageSize;
    }
    this.#trim();
  }

  /**
   * Unmap and release pages [begin, end) after finishing the device's work
   * (E7; PyTorch syncs the segment's stream, which replayed streams are not).
   * PyTorch unmaps and releases handle by handle; here every unmap comes
   * first, as one Transaction (a failed one maps the pages unmapped so far
   * back, with their access, and is thrown: nothing changed), and the
   * releases last, since a release cannot be taken back (core's Note
   * [Points of no return]): a page whose handle would not release is
   * unmapped all the same and goes to `unreleased`, for the caller to retry.
   * The same driver calls, in another order.
   */
  unmapPages(begin: number, end: number, unreleased: PhysicalAllocation[]): void {
    const rt = this.runtime;
    rt.synchronize(this.device);
    transaction(rt, (tx) => {
      for (let i = begin; i < end; i++) {
        const a = this.#pages[i]!;
        const va = this.pageAddress(i);
        rt.unmap(va, this.pageSize);
        tx.undo(() => {
          rt.map(va, this.pageSize, a);
          rt.setAccess(va, this.pageSize, this.#readWrite());
        });
      }
    });
    for (let i = begin; i < end; i++) {
      const a = this.#pages[i]!;
      this.#pages[i] = undefined;
      this.#mappedSize -= this.pageSize;
      try {
        rt.release(a);
      } catch {
        unreleased.push(a);
      }
    }
    this.#trim();
  }

  /** Give the range back; every page must be unmapped. Throws what runtime.free throws. */
  free(): void {
    this.runtime.free(this.reservation);
  }

  /** Unmap and release everything, free the range. Never throws. */
  dispose(): void {
    const rt = this.runtime;
    for (let i = 0; i < this.#pages.length; i++) {
      const a = this.#pages[i];
      if (a === undefined) continue;
      rt.quietly(() => rt.unmap(this.pageAddress(i), this.pageSize));
      rt.quietly(() => rt.release(a));
    }
    this.#pages.length = 0;
    this.#mappedSize = 0;
    if (this.reservation.owner !== undefined) rt.quietly(() => rt.free(this.reservation));
  }

  /** The access every mapped page has: the device reads and writes it. */
  #readWrite(): { device: number; access: Access }[] {
    return [{ device: this.device, access: Access.ReadWrite }];
  }

  /** Drop trailing unmapped entries (trimHandles). */
  #trim(): void {
    const p = this.#pages;
    while (p.length > 0 && p[p.length - 1] === undefined) p.length--;
  }
}
