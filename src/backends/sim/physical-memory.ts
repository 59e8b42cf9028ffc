import type { AllocationProperties } from '../../core/types.js';

/**
 * Bytes of one physical allocation, stored sparsely.
 *
 * Note [Sparse pages]: memory is kept in 64 KiB pages that exist only once
 * written with something other than zeros; a page never written reads as
 * zeros. A 141 GiB device with 1 GiB written costs about 1 GiB of host
 * memory, and a page is large enough that a bulk copy is a few thousand
 * memcpy calls per 256 MiB.
 */
export const PAGE_SIZE = 64 * 1024;

/** Host memory the simulated pages of one machine occupy. */
export class PageAccounting {
  pages = 0;
  get bytes(): number {
    return this.pages * PAGE_SIZE;
  }
}

const NO_PAGES: ReadonlyMap<number, Uint8Array> = new Map();

export class PhysicalMemory {
  /** Written pages by index; made on the first write (most allocations in a benchmark are never written). */
  #pages: Map<number, Uint8Array> | undefined;
  /** Backend handles (in any process), mappings and descriptors holding this memory. */
  holders = 0;

  constructor(
    /** Machine-wide id, for tracing. */
    readonly id: number,
    readonly size: number,
    readonly props: AllocationProperties,
    readonly accounting: PageAccounting,
  ) {}

  /** Host bytes in use for this memory's pages. */
  get residentBytes(): number {
    return (this.#pages?.size ?? 0) * PAGE_SIZE;
  }

  get #readPages(): ReadonlyMap<number, Uint8Array> {
    return this.#pages ?? NO_PAGES;
  }

  read(offset: number, dst: Uint8Array, dstOffset: number, length: number): void {
    while (length > 0) {
      const inPage = offset & (PAGE_SIZE - 1);
      const n = Math.min(PAGE_SIZE - inPage, length);
      const page = this.#readPages.get(pageIndex(offset));
      if (page === undefined) dst.fill(0, dstOffset, dstOffset + n);
      else dst.set(n === PAGE_SIZE ? page : page.subarray(inPage, inPage + n), dstOffset);
      offset += n;
      dstOffset += n;
      length -= n;
    }
  }

  write(offset: number, src: Uint8Array, srcOffset: number, length: number): void {
    while (length > 0) {
      const inPage = offset & (PAGE_SIZE - 1);
      const n = Math.min(PAGE_SIZE - inPage, length);
      this.#page(pageIndex(offset)).set(src.subarray(srcOffset, srcOffset + n), inPage);
      offset += n;
      srcOffset += n;
      length -= n;
    }
  }

  fill(offset: number, value: number, length: number): void {
    while (length > 0) {
      const inPage = offset & (PAGE_SIZE - 1);
      const n = Math.min(PAGE_SIZE - inPage, length);
      const index = pageIndex(offset);
      if (value === 0 && n === PAGE_SIZE) this.#dropPage(index);
      else {
        const page = value === 0 ? this.#readPages.get(index) : this.#page(index);
        page?.fill(value, inPage, inPage + n);
      }
      offset += n;
      length -= n;
    }
  }

  /** Copy `length` bytes from `src` at `srcOffset` to this memory at `offset` (memmove semantics). */
  copyFrom(src: PhysicalMemory, srcOffset: number, offset: number, length: number): void {
    if (src === this && srcOffset < offset + length && offset < srcOffset + length && srcOffset !== offset) {
      const tmp = new Uint8Array(length);
      src.read(srcOffset, tmp, 0, length);
      this.write(offset, tmp, 0, length);
      return;
    }
    while (length > 0) {
      const srcIn = srcOffset & (PAGE_SIZE - 1);
      const dstIn = offset & (PAGE_SIZE - 1);
      const n = Math.min(PAGE_SIZE - srcIn, PAGE_SIZE - dstIn, length);
      const from = src.#readPages.get(pageIndex(srcOffset));
      if (from === undefined) {
        // Copying zeros: a missing destination page is already zeros.
        if (n === PAGE_SIZE) this.#dropPage(pageIndex(offset));
        else this.#readPages.get(pageIndex(offset))?.fill(0, dstIn, dstIn + n);
      } else {
        this.#page(pageIndex(offset)).set(n === PAGE_SIZE ? from : from.subarray(srcIn, srcIn + n), dstIn);
      }
      srcOffset += n;
      offset += n;
      length -= n;
    }
  }

  /** Drop every page (the memory was freed). */
  discard(): void {
    if (this.#pages === undefined) return;
    this.accounting.pages -= this.#pages.size;
    this.#pages = undefined;
  }

  #page(index: number): Uint8Array {
    this.#pages ??= new Map();
    let page = this.#pages.get(index);
    if (page === undefined) {
      page = new Uint8Array(PAGE_SIZE);
      this.#pages.set(index, page);
      this.accounting.pages++;
    }
    return page;
  }

  #dropPage(index: number): void {
    if (this.#pages?.delete(index)) this.accounting.pages--;
  }
}

function pageIndex(offset: number): number {
  return Math.floor(offset / PAGE_SIZE);
}
