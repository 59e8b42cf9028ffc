import { vmmError } from '../../core/errors.js';
import { OrderedMap } from '../../util/ordered-map.js';
import { VaAllocator } from './va-allocator.js';

const MiB = 1024 * 1024;
/** The driver takes address space from the process in chunks of this granularity, aligned to it. */
export const VA_CHUNK = 32 * MiB;
/** The start-up heap's free run: where reservations go once its hole is taken (measured on the H200). */
export const STARTUP_HEAP_FREE = 24 * MiB;
/** The start-up heap's hole, below the run: where a lone small reservation lands. */
export const STARTUP_HOLE = 2 * MiB;
/** The driver's own memory between the hole and the run: reserved by nobody, mapped by nobody else. */
export const STARTUP_DRIVER_MEMORY = 72 * MiB;
/** The driver's mapping a start-up heap is the top of (hole, driver memory, run: its top 98 MiB). */
export const HEAP_MAPPING = 512 * MiB;
/** A created context's address space: its heap's mapping and 96 MiB above it (Note [Created contexts' heaps]). */
export const CONTEXT_SPAN = 608 * MiB;
/** A heap mapping's part below its hole (the top 98 MiB are hole, driver memory, run). */
export const BELOW_HOLE = HEAP_MAPPING - STARTUP_HOLE - STARTUP_DRIVER_MEMORY - STARTUP_HEAP_FREE;

/** One heap: a range of address space the driver holds, with the free ranges inside it. */
class Heap {
  readonly free: VaAllocator;
  constructor(
    readonly start: number,
    readonly end: number,
  ) {
    this.free = new VaAllocator(start, end);
  }
}

/*
 * Note [Driver VA placement]
 * Where the CUDA driver puts a reservation, and so when it honours an
 * address hint, as measured on the H200 (driver 580.159.04, CUDA 13.0) by
 * conformance/cuda/native/hint_probe.c, each experiment in a fresh process
 * (conformance/results/h200-hint-probe.json; experiment names in brackets),
 * and by the reserve.* cases of conformance/cuda/cases.ts. (The documentation
 * leaves the address to the driver, a non-zero addr being "a hint": CUDA
 * driver API, cuMemAddressReserve.)
 *
 * - Reservations live in heaps. One exists from start-up, high in the
 *   address space (0x7f.. on the H200): the top 98 MiB of a 512 MiB PROT_NONE
 *   mapping the driver holds [never: areaOfHint], with, in a fresh process, a
 *   2 MiB hole (6 MiB past an 8 MiB boundary), then 72 MiB of the driver's
 *   own memory, then a free run of 24 MiB (8 MiB-aligned) that ends the
 *   mapping. 13 reservations of 2 MiB fit, the 14th does not; the first
 *   lands in the hole, the other twelve 74 MiB above it [startupHeapFull];
 *   2+2+4+4+8 MiB fit, the next 8 MiB does not [placementAscending]. It is
 *   never given back.
 * - The hole is the heap's lowest free range, so by the lowest-address rule
 *   below a lone 2 MiB reservation lands there, and so does the next one
 *   whenever the hole is free again [neighbours, several]; 4 MiB, or 2 MiB
 *   aligned to 4 MiB, does not fit it and goes to the run [fresh4Plus2,
 *   alignmentAndSize, largeAlignment]. cuMemAlloc takes it too: a 2 MiB
 *   cuMemAlloc lands in the free hole, and a reservation after it in the run
 *   [placementAscending: cuMemAlloc, afterAlloc]. The 72 MiB above the hole
 *   is no reservation's: a hint there is not honoured (2 MiB past the hole
 *   -> the run [several, matrixDescending]), nor is an exact range there
 *   free (allocateAt), so a map running past a reservation in the hole is
 *   refused (Note [Mappings past a reservation's end] in the CUDA flavor;
 *   map.overReservationLoneAtStart). The startupHeap.* cases
 *   (conformance/cuda/cases/startup-heap.ts) recorded the rest in the
 *   recorder's process, where the hole was free again between cases: three
 *   lone 2 MiB reservations lie 37 and 1 granules apart, the first's tail
 *   taken and the third's free; after a 4 MiB or a 4 MiB-aligned one, a lone
 *   2 MiB lands 37 granules below it; hints 2 MiB below the hole and 4, 36
 *   and 72 MiB above it all go to the run. A cuMemAlloc of 2 MiB, or of
 *   4 KiB, takes the hole (a reservation after it lands 37 granules above,
 *   its tail free), and cuMemFree gives it back at once. A stream or an event
 *   takes nothing there. A created context does: it has a heap of its own,
 *   searched first (Note [Created contexts' heaps]).
 *   test/backends/sim/hint-probe-replay.test.ts replays the probe's
 *   experiments on this model.
 * - Past the run's end, where the driver's mapping ends, the address space is
 *   not free either: a map running past the last granule of a full run is
 *   refused (startupHeap.fillTheRunThenMapPastItsEnd), where one past a full
 *   chunk maps [mapPastChunkEnd]. The simulator holds the space from the run's
 *   end to the next chunk boundary (8 MiB), so no exact range starts there.
 * - A reservation no heap has room for gets a heap of its own: a chunk of
 *   the size rounded up to max(32 MiB, alignment), aligned so, taken from the
 *   process's address space at the lowest free address (0x302000000 upward
 *   on the H200; each chunk is a new PROT_NONE mapping in /proc/self/maps):
 *   8 -> 32 MiB, 34 -> 64, 48 -> 64, 66 -> 96, 1024 -> 1024 [placementAscending,
 *   reuse, matrix]; 2 MiB aligned to 64 MiB -> 64, to 1 GiB -> 1 GiB
 *   [largeAlignment].
 * - Heaps are searched newest first, the start-up heap last; inside a heap
 *   the lowest fitting address wins. So a 2 MiB reservation after two 48 MiB
 *   ones lands in the newer one's chunk, 48 MiB in, not in the older one's
 *   free tail nor in the start-up heap [searchOrder, placementInterleaved].
 * - A chunk goes back to the OS as soon as nothing is reserved in it (its
 *   mapping disappears at that free; reserve 64, free, reserve 64 gives the
 *   same base [reuse]).
 * - A hint h is where that search starts: the same search counting only
 *   addresses >= h, then a new chunk at the lowest free suitably aligned
 *   address >= h. So h is honoured exactly when [h, h + size) is free in the
 *   first heap, newest first, that has room at or above h, or when no heap has
 *   room there and h is a free chunk boundary. A hint into the free tail of an
 *   older chunk goes to a newer chunk with room above it [searchOrder:
 *   hintFreeInOlderTail]. A hint 2 MiB into a just-freed 64 MiB range finds
 *   its chunk gone: a 2 MiB request lands in the start-up heap above it, a
 *   32 MiB one in a new chunk at the next 32 MiB boundary [matrix, and the
 *   reserve.hintInto* cases]; at the base, or a 32 MiB multiple into it, a
 *   request no heap has room for gets its chunk right there [matrix]. That
 *   is the "freed reservation of 32 MiB or more" of the first transcript:
 *   those ranges were chunks of their own, smaller ones sat in the start-up
 *   heap. It is the heap, not the size: into a freed 48 MiB range whose chunk
 *   still holds another reservation, hints are honoured [chunkKeptAlive].
 *   And when the start-up heap is full, a 4 MiB range gets a chunk of its own
 *   and a hint 2 MiB into it after its free is not honoured either
 *   [startupHeapFull]: what made the ACL expectPtr row fail on the GPU.
 * - A hint above every heap gets a new chunk above it [never: +16 GiB]; one
 *   past the 47-bit address space fails with CUDA_ERROR_OUT_OF_MEMORY, with no
 *   fall-back to a lower address [never: +1 TiB; reserve.hintPastAddressSpace].
 * - A whole-handle map may run past a reservation that fills its chunk, into
 *   address space no heap holds; a hint there afterwards is not honoured (the
 *   heaps do not know of it) [mapPastChunkEnd].
 *
 * DriverVaSpace models exactly this, for every flavor: it is the NVIDIA
 * driver's rule, and the simulated MI300X and 910B share the machine model
 * checked against the H200 (unchecked against ROCm's and CANN's allocators).
 * Its start-up heap is at 0x7000_0000_0000 with 24 MiB free and chunks come
 * from 0x6000_0000_0000 up, below it as on the H200. Its run starts at
 * 0x7000_0000_0000, its hole 74 MiB below (so 6 MiB past an 8 MiB boundary,
 * as on the H200) and the driver's memory between them is held for good.
 * Left out: the rest of the driver's 512 MiB mapping (the simulator's space
 * below the hole and above the run is free, where the H200 has host
 * mappings), and the run's alignment: the H200's starts only 8 MiB-aligned,
 * so a request aligned to 32 MiB or more never fits there and gets a chunk,
 * while the simulator's starts at a 4 GiB boundary and takes it. On the H200
 * the start-up heap also serves the driver's own later allocations, so how
 * much of it is free depends on the process; the simulator's holds only what
 * the program reserved and cuMemAlloc'd there.
 *
 * An address the driver chose on its own is not a hint: a recorded
 * cuMemAlloc address that replay reproduces, or the part of a whole-handle
 * map past its reservation's end that the CUDA flavor holds with a hidden
 * reservation. Those ask for `exact` (Backend.reserve): the range itself
 * whenever it is free address space, in a heap's free range or as a heap of
 * exactly that range (allocateAt).
 */
/*
 * Note [Created contexts' heaps]
 * cuCtxCreate gives the new context a start-up heap of its own, laid out as
 * the primary context's: the top 98 MiB of a 512 MiB mapping, a 2 MiB hole,
 * 72 MiB of the driver's, a 24 MiB run. As the H200 answered the
 * startupHeap.* cases of created contexts (driver 580.159.04, 2026-12-01
 * 23:29 UTC, four cases in one fresh process), in granules of 2 MiB from a
 * lone reservation just freed in the primary context's hole:
 * - a lone 2 MiB reservation in the created context lands -304 (608 MiB
 *   below), its tail not free; the next lands 37 above it, its tail free:
 *   the new heap's hole, then its run (createdContextTwoLone);
 * - a second created context's hole lies 304 below the first's
 *   (twoCreatedContexts): each context takes 608 MiB downward, its 512 MiB
 *   mapping and 96 MiB above it (the primary's mapping ends 96 MiB above
 *   the first context's). A context destroyed with nothing reserved in its
 *   heap gives it all back: the next case's context lands at -304 again;
 * - a 2 MiB cuMemAlloc in it takes its hole, a reservation after that its
 *   run, 37 above (cuMemAllocInCreatedContext);
 * - a reservation outlives cuCtxDestroy (which "will not destroy memory
 *   allocations by cuMemCreate", CUDA driver API, cuCtxDestroy; it maps
 *   afterwards), and the heap outlives the context with it: a lone 2 MiB
 *   reservation then lands -511, the lowest granule of the dead context's
 *   512 MiB mapping, not in the primary's free hole
 *   (reservationOutlivesCreatedContext). So the driver's memory in that
 *   mapping (below the hole and above it) went with the context, and the
 *   mapping stays a heap searched before the primary's.
 * All of this is the one rule of Note [Driver VA placement]: a created
 * context's heap is a heap like a chunk, made at cuCtxCreate and so newer
 * than the chunks before it, searched newest first, lowest address first
 * in it; while the context lives the driver's parts of its mapping are
 * taken. The current context plays no part: the cases cannot tell "newest
 * heap first" from "the current context's heap first" except after the
 * destroy, where the primary context is current and the dead context's
 * heap still wins. Not recorded, so modelled as a chunk is: the dead
 * context's heap goes back once nothing is reserved in it, and a lone
 * reservation with the primary current while a created context lives lands
 * in the created one's hole.
 * startupHeap.loneAfterCreatedContext (run 9, -320) was recorded in a
 * worker that had created contexts and streams in cases before it; the
 * same calls in a fresh process answered -304 (run 10), which the
 * simulator follows, so that record stays a listed divergence.
 *
 * The simulator's context heaps sit below its start-up heap as on the
 * H200: the k-th free 608 MiB span downward from 414 MiB below the hole
 * (the primary's mapping's bottom), the mapping its low 512 MiB; its hole
 * 414 MiB in, so 608k MiB below the primary's. The CUDA flavour tells the
 * backend (Backend.createContext, destroyContext); with no created context
 * nothing here runs.
 */
/** The driver's reservations: a start-up heap and 32 MiB-granular chunks (Note [Driver VA placement]). */
export class DriverVaSpace {
  /** The process address space the chunks come from; the start-up heap is carved out of it. */
  readonly #os: VaAllocator;
  /** The start-up heap's run, kept as its parts: the common reserve/free touches only these. */
  readonly #startupFree: VaAllocator;
  readonly #startupStart: number;
  readonly #startupEnd: number;
  /** The start-up heap's hole, below the driver's memory (which no allocator holds: it is never free). */
  readonly #hole: VaAllocator;
  readonly #holeStart: number;
  /** The largest alignment the hole's start meets (2 MiB): no remainder on an address per reserve. */
  readonly #holeAlignment: number;
  /**
   * One reservation holds the whole hole, and #hole does not know it: the common
   * lone 2 MiB reserve/free sets this instead of emptying and refilling #hole's map.
   */
  #holeWhole = false;
  /** Chunks in the order they were made (newest last). */
  readonly #chunks: Heap[] = [];
  /** The same chunks, keyed by end, to find a reservation's chunk. */
  readonly #chunkByEnd = new OrderedMap<Heap>();
  /** Live created contexts' heaps (among the chunks), by id: Note [Created contexts' heaps]. */
  readonly #contexts = new Map<number, Heap>();
  #nextContext = 1;

  /** A space of [start, end) whose start-up heap's run begins at `startupRun`; its hole lies below. */
  constructor(start: number, end: number, startupRun: number) {
    this.#os = new VaAllocator(start, end);
    const below = STARTUP_HOLE + STARTUP_DRIVER_MEMORY;
    const heap = startupRun - below;
    // Past the run no map may run on either: held up to the next chunk boundary, where chunks may go.
    const held = (Math.floor((startupRun + STARTUP_HEAP_FREE) / VA_CHUNK) + 1) * VA_CHUNK - heap;
    if (heap < start || !this.#os.take(heap, held))
      throw new RangeError('the start-up heap does not fit the address space');
    this.#startupStart = startupRun;
    this.#startupEnd = startupRun + STARTUP_HEAP_FREE;
    this.#startupFree = new VaAllocator(startupRun, this.#startupEnd);
    this.#holeStart = heap;
    let holeAlignment = STARTUP_HOLE;
    while (heap % (2 * holeAlignment) === 0) holeAlignment *= 2;
    this.#holeAlignment = holeAlignment;
    this.#hole = new VaAllocator(heap, heap + STARTUP_HOLE);
  }

  /** Reserve `size` bytes aligned to `alignment` (a power of two), searching from `hint` (0: none). */
  allocate(size: number, alignment: number, hint: number): number {
    const chunks = this.#chunks;
    for (let i = chunks.length - 1; i >= 0; i--) {
      const c = chunks[i]!;
      if (c.end <= hint) continue;
      const base = c.free.allocateFrom(size, alignment, hint);
      if (base >= 0) return base;
    }
    if (this.#startupEnd > hint) {
      // The hole first: it is the start-up heap's lowest free range.
      if (!this.#holeWhole && hint < this.#holeStart + STARTUP_HOLE) {
        const base = this.#inHole(size, alignment, hint);
        if (base >= 0) return base;
      }
      const base = this.#startupFree.allocateFrom(size, alignment, hint);
      if (base >= 0) return base;
    }
    return this.#newChunk(size, alignment, hint);
  }

  /** allocateFrom in the hole, taking it whole without touching #hole when that is what is asked. */
  #inHole(size: number, alignment: number, hint: number): number {
    if (size !== STARTUP_HOLE || hint > this.#holeStart)
      return this.#hole.allocateFrom(size, alignment, hint);
    if (alignment > this.#holeAlignment || !this.#hole.allFree) return -1;
    this.#holeWhole = true;
    return this.#holeStart;
  }

  /**
   * `size` bytes at `at` itself whenever that range is free address space:
   * inside one heap's free range, or outside every heap (then a heap of
   * exactly that range). Else as allocate without a hint. For addresses the
   * driver chose on its own (Backend.reserve's `exact`).
   */
  allocateAt(size: number, alignment: number, at: number): number {
    if (at >= this.#holeStart && at < this.#startupEnd) {
      // In the start-up heap: the run, or the hole; the driver's memory between them is never free.
      const free =
        at >= this.#startupStart
          ? this.#startupFree.take(at, size)
          : !this.#holeWhole && this.#hole.take(at, size);
      return free ? at : this.allocate(size, alignment, 0);
    }
    const c = this.#chunkByEnd.higher(at);
    if (c !== undefined && c.start <= at)
      return c.free.take(at, size) ? at : this.allocate(size, alignment, 0);
    // Outside every heap: the range must not reach into one either.
    if (at % alignment !== 0 || !this.#os.take(at, size)) return this.allocate(size, alignment, 0);
    this.#addChunk(at, at + size).free.take(at, size);
    return at;
  }

  release(base: number, size: number): void {
    if (base < this.#startupEnd && base >= this.#holeStart) {
      if (base >= this.#startupStart) this.#startupFree.release(base, size);
      else if (this.#holeWhole) this.#holeWhole = false;
      else this.#hole.release(base, size);
      return;
    }
    const c = this.#chunkByEnd.higher(base);
    if (c === undefined || c.start > base) throw new RangeError(`0x${base.toString(16)} is in no heap`);
    c.free.release(base, size);
    this.#dropIfEmpty(c);
  }

  /** A chunk with nothing reserved in it goes back to the process. */
  #dropIfEmpty(c: Heap): void {
    if (!c.free.allFree) return;
    this.#chunks.splice(this.#chunks.lastIndexOf(c), 1);
    this.#chunkByEnd.delete(c.end);
    this.#os.release(c.start, c.end - c.start);
  }

  /** cuCtxCreate: a heap of the new context's own, searched first (Note [Created contexts' heaps]); its id. */
  createContext(): number {
    for (let at = this.#holeStart - BELOW_HOLE - CONTEXT_SPAN; at >= this.#os.start; at -= CONTEXT_SPAN) {
      if (!this.#os.take(at, CONTEXT_SPAN)) continue;
      const heap = this.#addChunk(at, at + HEAP_MAPPING);
      // The driver's parts of the mapping: below the hole, and between the hole and the run.
      heap.free.take(at, BELOW_HOLE);
      heap.free.take(at + BELOW_HOLE + STARTUP_HOLE, STARTUP_DRIVER_MEMORY);
      const id = this.#nextContext++;
      this.#contexts.set(id, heap);
      return id;
    }
    throw vmmError('out-of-memory', 'no free virtual range for a context heap');
  }

  /** cuCtxDestroy: the driver's parts of the context's heap go; what was reserved there keeps the rest. Never throws. */
  destroyContext(id: number): void {
    const heap = this.#contexts.get(id);
    if (heap === undefined) return;
    this.#contexts.delete(id);
    this.#os.release(heap.end, CONTEXT_SPAN - HEAP_MAPPING);
    heap.free.release(heap.start, BELOW_HOLE);
    heap.free.release(heap.start + BELOW_HOLE + STARTUP_HOLE, STARTUP_DRIVER_MEMORY);
    this.#dropIfEmpty(heap);
  }

  /** Heaps the driver holds now, the start-up heap included. */
  get heaps(): number {
    return this.#chunks.length + 1;
  }

  #newChunk(size: number, alignment: number, hint: number): number {
    const unit = Math.max(alignment, VA_CHUNK);
    const bytes = Math.ceil(size / unit) * unit;
    if (!Number.isSafeInteger(bytes))
      throw vmmError('out-of-memory', `no free virtual range of ${size} bytes`);
    const start = this.#os.allocateFrom(bytes, unit, hint);
    if (start < 0) throw vmmError('out-of-memory', `no free virtual range of ${size} bytes`);
    this.#addChunk(start, start + bytes).free.take(start, size);
    return start;
  }

  /** A new heap on [start, end), address space already taken from #os. */
  #addChunk(start: number, end: number): Heap {
    const c = new Heap(start, end);
    this.#chunks.push(c);
    this.#chunkByEnd.set(end, c);
    return c;
  }
}
