/**
 * vmmkit's allocator beside PyTorch's expandable segments (the model) on
 * every recorded H200 trace (traces/h200 and traces/h200-heldout, *-expandable.pickle.gz), through
 * the same replay `vmmkit replay` runs, driver time priced with
 * bench/results/h200-driver-costs.json:
 *
 *   npx tsc -p . && node dist/bench/vmmkit-traces.js ['{"option": value}'] [--breakdown]
 *
 * Prints per trace: peak reserved / peak requested and estimated driver
 * time of both, and vmmkit's driver calls. With --breakdown, also where the
 * memory is at each allocator's peak reserved (docs/vmmkit-allocator-log.md):
 * (a) live requested bytes, (b) 512 B rounding inside live blocks, (c) free
 * bytes on mapped pages no live block touches, (d) free bytes on mapped
 * pages a live block touches (partial pages), (e) idle unmapped handles,
 * by pool (small / large) and stream, with the malloc that made the peak,
 * the largest free block then and (vmmkit) its handles, idle ones and
 * their idle ages; and the same when the live requested
 * bytes peak. Each run is replayed twice: the first finds the malloc at
 * which the peak is first reached, the second stops there.
 */
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { AllocatorContext, CachingAllocator } from '../src/alloc/allocator.js';
import { type PytorchAllocatorSettings, PytorchExpandableAllocator } from '../src/alloc/pytorch/index.js';
import { type MemoryLayout, VmmkitAllocator, type VmmkitOptions } from '../src/alloc/vmmkit/index.js';
import { replay } from '../src/entry/replay-library.js';
import type { AllocatorFactory } from '../src/replay/engine/allocators.js';
import { loadCostTable } from '../src/replay/engine/cost-table.js';
import { planReplay } from '../src/replay/engine/trace-plan.js';
import { readSnapshotFile } from '../src/replay/read/load.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const MiB = 1024 * 1024;

export interface TraceRow {
  readonly trace: string;
  readonly expandable: { ratio: number; driverUs: number };
  readonly vmmkit: { ratio: number; driverUs: number; calls: Record<string, number> };
}

/** The recorded traces this replays (the expandable recordings; the native ones make the same requests). */
export function traceFiles(folders: readonly string[] = TRACE_FOLDERS): string[] {
  return folders.flatMap((folder) => {
    const dir = `${root}${folder}/`;
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((f) => f.endsWith('-expandable.pickle.gz'))
      .sort()
      .map((f) => dir + f);
  });
}

/** The folders replayed: the traces the defaults were first chosen on, and the held-out ones (record.py --seed-offset 100). */
export const TRACE_FOLDERS = ['traces/h200', 'traces/h200-heldout'] as const;

export function vmmkitFactory(options: VmmkitOptions = {}): AllocatorFactory {
  return { name: 'vmmkit', description: 'vmmkit', create: (c) => new VmmkitAllocator(c, options) };
}

const expandableFactory: AllocatorFactory = {
  name: 'pytorch-expandable',
  description: 'expandable segments',
  create: (c, s) => new PytorchExpandableAllocator(c, s),
};

/** Ratio and estimated driver time of the expandable model and of vmmkit (with `options`) on one trace. */
export function compareOnTrace(file: string, options: VmmkitOptions = {}): TraceRow {
  const costs = loadCostTable(`${root}bench/results/h200-driver-costs.json`);
  const snapshot = readSnapshotFile(file);
  const result = replay(snapshot, {
    allocators: [expandableFactory, vmmkitFactory(options)],
    costs,
    keepEvents: false,
  });
  const [es, vk] = result.allocators;
  for (const a of result.allocators)
    if (a.error !== undefined || a.ooms > 0)
      throw new Error(`${a.name} on ${file}: ${a.error ?? `${a.ooms} OOMs`}`);
  return {
    trace: file
      .split('/')
      .slice(-2)
      .join('/')
      .replace('-expandable.pickle.gz', '')
      .replace('h200-heldout/', 'heldout/')
      .replace('h200/', ''),
    expandable: { ratio: es.ratio!, driverUs: es.driverTimeUs! },
    vmmkit: { ratio: vk.ratio!, driverUs: vk.driverTimeUs!, calls: vk.driverCalls },
  };
}

// --- where the memory is at the peak ----------------------------------------------------

interface Area {
  readonly stream: number;
  readonly pool: 'small' | 'large';
  readonly pageSize: number;
  /** Blocks in address order, tiling mapped and unmapped space. */
  readonly blocks: readonly { address: number; size: number; requested: number; live: boolean }[];
  /** Whether the page at this address (a multiple of pageSize) is mapped. */
  readonly mapped: (pageAddress: number) => boolean;
}

type Breakdown = Record<string, number>;

function add(out: Breakdown, key: string, bytes: number): void {
  if (bytes !== 0) out[key] = (out[key] ?? 0) + bytes;
}

/** Sort the bytes of `areas` into (a) to (d), by pool and stream; (e) comes from the allocator. */
function classify(areas: readonly Area[], out: Breakdown): void {
  for (const a of areas) {
    const tag = `${a.pool} s${a.stream}`;
    const page = a.pageSize;
    const liveOn = new Set<number>();
    for (const b of a.blocks) {
      if (!b.live) continue;
      add(out, `a live ${tag}`, b.requested);
      add(out, `b rounding ${tag}`, b.size - b.requested);
      for (let p = Math.floor(b.address / page); p < Math.ceil((b.address + b.size) / page); p++)
        liveOn.add(p);
    }
    for (const b of a.blocks) {
      if (b.live) continue;
      const first = Math.floor(b.address / page);
      const last = Math.ceil((b.address + b.size) / page);
      if (last - first > 1 << 20) continue; // an arena's unmapped tail
      for (let p = first; p < last; p++) {
        if (!a.mapped(p * page)) continue;
        const lo = Math.max(b.address, p * page);
        const hi = Math.min(b.address + b.size, (p + 1) * page);
        add(out, liveOn.has(p) ? `d partial pages ${tag}` : `c free pages ${tag}`, hi - lo);
      }
    }
  }
}

function esAreas(a: PytorchExpandableAllocator): Area[] {
  return a.snapshot().map((s) => ({
    stream: s.stream,
    pool: s.segmentType,
    pageSize: 2 * MiB,
    blocks: s.blocks.map((b) => ({
      address: b.address,
      size: b.size,
      requested: b.requestedSize,
      live: b.state === 'active_allocated',
    })),
    mapped: () => true,
  }));
}

function vmmkitAreas(layout: MemoryLayout): Area[] {
  return layout.arenas.map((r) => ({
    stream: r.stream,
    pool: r.kind === 'small' ? 'small' : 'large',
    pageSize: layout.pageSize,
    blocks: r.blocks,
    mapped: (p) => r.mappedPage(p),
  }));
}

/** Where `make`'s memory is when its reserved bytes (or, with `of` 'requested', the requested bytes) first reach their peak on `file`. */
function breakdownAtPeak(
  file: string,
  make: (c: AllocatorContext, s: PytorchAllocatorSettings) => CachingAllocator,
  areas: (a: CachingAllocator) => { areas: Area[]; pooled: number; detail?: string },
  of: 'reserved' | 'requested' = 'reserved',
): { bytes: Breakdown; detail: string } {
  const snapshot = readSnapshotFile(file);
  const plan = planReplay(snapshot);
  let mallocs = 0;
  let peakAt = -1;
  let peak = 0;
  let stopAt = -1;
  let out: Breakdown | undefined;
  let detail = '';
  const wrap = (inner: CachingAllocator): CachingAllocator => ({
    name: inner.name,
    device: inner.device,
    get stats() {
      return inner.stats;
    },
    malloc(size, stream) {
      const before = inner.stats.reservedBytes;
      const r = inner.malloc(size, stream);
      mallocs++;
      const now = of === 'reserved' ? inner.stats.reservedBytes : inner.stats.requestedBytes;
      if (now > peak) {
        peak = now;
        peakAt = mallocs;
      }
      if (mallocs === stopAt && out === undefined) {
        out = { reserved: inner.stats.reservedBytes, requested: inner.stats.requestedBytes };
        const { areas: list, pooled, detail: more } = areas(inner);
        classify(list, out);
        add(out, 'e idle unmapped handles', pooled);
        // The largest free block on mapped pages (not an arena's unmapped tail).
        let hole = 0;
        for (const a of list)
          for (const b of a.blocks)
            if (!b.live && a.mapped(Math.floor((b.address + b.size - 1) / a.pageSize) * a.pageSize))
              hole = Math.max(hole, b.size);
        detail =
          `malloc ${mallocs} of ${(size / MiB).toFixed(2)} MiB grew reserved ${((inner.stats.reservedBytes - before) / MiB).toFixed(0)} MiB;` +
          ` largest free block ${(hole / MiB).toFixed(1)} MiB${more === undefined ? '' : `; ${more}`}`;
      }
      return r;
    },
    free: (a) => inner.free(a),
    emptyCache: () => inner.emptyCache(),
    dispose: () => inner.dispose(),
    [Symbol.dispose]: () => inner.dispose(),
  });
  const factory: AllocatorFactory = { name: 'x', description: 'x', create: (c, s) => wrap(make(c, s)) };
  replay(snapshot, { allocators: [factory], plan, keepEvents: false });
  stopAt = peakAt;
  mallocs = 0;
  peak = 0;
  replay(snapshot, { allocators: [factory], plan, keepEvents: false });
  return { bytes: out!, detail };
}

function printBreakdown(name: string, { bytes: b, detail }: { bytes: Breakdown; detail: string }): void {
  const mib = (n: number) => (n / MiB).toFixed(1).padStart(8);
  console.log(`  ${name}: reserved ${mib(b.reserved)} MiB, live requested then ${mib(b.requested)} MiB`);
  console.log(`    (${detail})`);
  for (const k of Object.keys(b).sort())
    if (k !== 'reserved' && k !== 'requested') console.log(`    ${k.padEnd(28)} ${mib(b[k])}`);
}

function main(argv: readonly string[]): void {
  const json = argv.find((a) => a.startsWith('{'));
  const options: VmmkitOptions = json === undefined ? {} : JSON.parse(json);
  const breakdown = argv.includes('--breakdown');
  console.log(
    'trace                       expandable ratio, driver | vmmkit ratio, driver (x ES) | vmmkit calls',
  );
  for (const file of traceFiles()) {
    const r = compareOnTrace(file, options);
    const c = r.vmmkit.calls;
    console.log(
      `${r.trace.padEnd(27)} ${r.expandable.ratio.toFixed(4)} ${(r.expandable.driverUs / 1000).toFixed(1).padStart(5)} ms | ` +
        `${r.vmmkit.ratio.toFixed(4)} ${(r.vmmkit.driverUs / 1000).toFixed(1).padStart(5)} ms (${(r.vmmkit.driverUs / r.expandable.driverUs).toFixed(2)}x)` +
        ` | create ${c.cuMemCreate} map ${c.cuMemMap} unmap ${c.cuMemUnmap} setAccess ${c.cuMemSetAccess} release ${c.cuMemRelease}`,
    );
    if (breakdown) {
      for (const of of ['reserved', 'requested'] as const) {
        printBreakdown(
          `expandable at its peak ${of}`,
          breakdownAtPeak(
            file,
            (c, s) => new PytorchExpandableAllocator(c, s),
            (a) => ({ areas: esAreas(a as PytorchExpandableAllocator), pooled: 0 }),
            of,
          ),
        );
        printBreakdown(
          `vmmkit at its peak ${of}`,
          breakdownAtPeak(
            file,
            (c) => new VmmkitAllocator(c, options),
            (a) => {
              const l = (a as VmmkitAllocator).layout();
              const idle = l.arenas.flatMap((r) => r.chunks.filter((c) => c.live === 0));
              const ages = idle.map((c) => c.idleFor);
              const handles = l.arenas.reduce((n, r) => n + r.chunks.length, 0);
              const detail =
                `${handles} handles mapped, ${idle.length} idle` +
                (idle.length > 0 ? ` (${Math.min(...ages)} to ${Math.max(...ages)} mallocs)` : '');
              return { areas: vmmkitAreas(l), pooled: l.pooledBytes, detail };
            },
            of,
          ),
        );
      }
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main(process.argv.slice(2));
