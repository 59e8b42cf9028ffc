import { AllocatorArgumentError, AllocatorInternalError, AllocatorStateError } from '../errors.js';
import { BlockPool } from './block-pool.js';

/**
 * Note [Private pools]
 * ~~~~~~~~~~~~~~~~~~~~
 * CUDA graphs (torch.cuda.graph, make_graphed_callables) and MemPool
 * (torch.cuda.use_mem_pool) take their memory from private pools of the
 * caching allocator. The rules modelled, as read in
 * c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator: get_pool,
 * beginAllocateToPool, releasePool, create_or_incref_pool, alloc_block,
 * release_block, unmap_block, release_cached_blocks, malloc, snapshot) at
 * bbopen/pytorch 68f67124 (about 2.9/2.10), cross-checked against
 * pytorch/pytorch 001074d2 (about 2.3) and cyyever/pytorch 076f0279 (2026's
 * main, after 2.11); they agree on every rule below unless it says so, so
 * 2.11 has them too:
 *
 * P1 A pool is named by a MempoolId_t, a pair; (0, 0) is the default pool.
 *    torch.cuda.graph without `pool=` names a new one (uid, 0), uids
 *    counting from 1 (graph_pool_handle(is_user_created=false));
 *    graph_pool_handle() and MemPool name (0, uid). A snapshot's segment
 *    lists its head block's pool as segment_pool_id; 2.11's trace entries
 *    carry none (the recorder keeps it in the C++ entry only).
 * P2 Routing, get_pool: while captures_underway is not empty (an entry per
 *    beginAllocateToPool, which CUDAGraph::capture_begin and use_mem_pool
 *    call, each with a filter: for a graph, "this stream is capturing with
 *    my capture id"), a request whose stream an entry's filter accepts
 *    (the first such entry; 2026's main searches the newest first) goes to
 *    that pool's small BlockPool (rounded size <= 1 MiB) or large one;
 *    every other request to the default pools. round_size,
 *    get_allocation_size, best fit, should_split and the mss rules (N2-N8)
 *    are the same in every pool, each pool searched on its own.
 * P3 A PrivatePool is made by create_or_incref_pool at beginAllocateToPool
 *    with use_count 1; a live pool named again (graphs sharing `pool=`)
 *    gets use_count + 1 (naming a pool whose use_count reached 0 fails an
 *    internal assert). releasePool (CUDAGraph::reset or its destructor,
 *    ~MemPool) takes use_count - 1; at 0 the pool is put in
 *    graph_pools_freeable.
 * P4 cudaMalloc_count counts the pool's driver allocations not yet given
 *    back: + 1 per alloc_block that made a segment (native) or mapped pages
 *    (expandable, once per call however many ranges it mapped); - 1 per
 *    release_block and per unmap_block that unmapped a range, each first
 *    asserting the count is above 0.
 * P5 A block stays in its pool for life: free_block puts it back into
 *    block->pool, a capture underway or not, and only requests routed to
 *    that pool (later captures sharing it) can reuse it. The default pools
 *    never see private memory, nor a private pool the default's.
 * P6 A free with stream uses during a capture is deferred (deferred_blocks;
 *    process_events is skipped while captures are underway; with
 *    graph_capture_record_stream_reuse a block may be freed inside the
 *    capture once its free markers precede every terminal node) and
 *    completes later; the trace's free_completed says when, and replay
 *    frees a block there (N9), so nothing more is modelled.
 * P7 release_cached_blocks(context, {0, 0}) (empty_cache(), the OOM path):
 *    when no capture is underway, the default pools' whole free segments
 *    (large, then small; N6 h, E7); then, for every freeable private pool
 *    (graph_pools_freeable's order, a hash map's: taken here as the order
 *    pools became freeable), release_blocks of its small pool, then its
 *    large one, and the pool is erased when its cudaMalloc_count is then 0.
 *    A private pool still in use is never released. (~MemPool calls
 *    releasePool, then release_cached_blocks with its own id, which
 *    releases that pool alone, if freeable: not modelled.)
 * P8 In malloc's OOM path, release_cached_blocks and the retry after it
 *    are skipped while captures_underway is not empty;
 *    release_available_cached_blocks (only with max_split_size set) acts
 *    on the request's own pool, a private one too.
 * P9 garbage_collect_cached_blocks looks only at the default large pool.
 * P10 total_allocated_memory and reserved_bytes count every pool, so the
 *    cap (allowed_memory_maximum) and max_memory_reserved include private
 *    memory; the OOM message counts private pools' free blocks apart.
 * P11 Expandable segments serve private pools too (all but a MemPool with a
 *    custom allocator; bbopen 68f67124 skips them for private pools in
 *    fbcode builds only): find_expandable_block searches only the
 *    request's BlockPool, so each pool has its own reserved range per
 *    stream, and its pages are unmapped only by release_cached_blocks of a
 *    freeable pool (P7; release_available_cached_blocks and GC skip
 *    expandable blocks, E7).
 *
 * Here a pool is a positive number (0 is the default pool) given to
 * malloc: a request naming a pool is one made while a capture routes that
 * stream to it (P2), and the model knows no captures otherwise. So P8 is
 * applied to requests naming a private pool, and a default-pool request is
 * taken to be made with no capture underway. Not modelled: MemPools with
 * their own allocator, use_on_oom pools (try_mempool_fallback), no-split
 * pools, checkpointing of private pool state (cudagraph trees).
 */
export class PrivatePool {
  /** Live graphs (or MemPools) using the pool (P3); freeable at 0. */
  useCount = 1;
  /** Driver allocations made for the pool and not yet given back (P4). */
  cudaMallocCount = 0;
  readonly small: BlockPool;
  readonly large: BlockPool;

  constructor(readonly id: number) {
    this.small = new BlockPool(true, this);
    this.large = new BlockPool(false, this);
  }
}

/** One allocator's private pools by number (graph_pools), and those no longer used (graph_pools_freeable). */
export class PrivatePools {
  readonly #pools = new Map<number, PrivatePool>();
  /** In the order they became freeable (P7). */
  readonly #freeable: PrivatePool[] = [];

  /** The pool a request naming `id` goes to, made on first use (beginAllocateToPool, P3). */
  route(id: number): PrivatePool {
    const p = this.#pools.get(id);
    if (p === undefined) return this.#make(id);
    if (p.useCount === 0)
      throw new AllocatorStateError(
        `private pool ${id} is no longer used by any graph (PyTorch asserts use_count > 0)`,
      );
    return p;
  }

  /** create_or_incref_pool (P3): a new pool with use count 1, or one more user of a live one. */
  retain(id: number): void {
    const p = this.#pools.get(id);
    if (p === undefined) this.#make(id);
    else this.route(id).useCount++;
  }

  /** releasePool (P3): one user fewer; at none the pool becomes freeable. */
  release(id: number): void {
    const p = this.#pools.get(id);
    if (p === undefined || p.useCount === 0) throw new AllocatorArgumentError(`no private pool ${id} in use`);
    if (--p.useCount === 0) this.#freeable.push(p);
  }

  /** Freeable pools, in the order they became so (a copy). */
  freeable(): PrivatePool[] {
    return [...this.#freeable];
  }

  /** Forget a freeable pool that holds no driver memory (P7). */
  erase(p: PrivatePool): void {
    this.#pools.delete(p.id);
    this.#freeable.splice(this.#freeable.indexOf(p), 1);
  }

  /** Every pool, by number. */
  all(): IterableIterator<PrivatePool> {
    return this.#pools.values();
  }

  clear(): void {
    this.#pools.clear();
    this.#freeable.length = 0;
  }

  #make(id: number): PrivatePool {
    const p = new PrivatePool(id);
    this.#pools.set(id, p);
    return p;
  }
}

/** PyTorch's TORCH_INTERNAL_ASSERT(cudaMalloc_count > 0) failing (P4): its count of driver allocations is off. */
export function cudaMallocCountAssert(p: PrivatePool): AllocatorInternalError {
  return new AllocatorInternalError(
    `private pool ${p.id}: PyTorch's assertion cudaMalloc_count > 0 fails here (more driver allocations given back than it counted)`,
  );
}
