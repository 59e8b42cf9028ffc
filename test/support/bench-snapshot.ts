/**
 * A deterministic PyTorch memory snapshot of any number of events, as the
 * replay benchmark (bench/replay.ts) and the browser test of a million-event
 * report use it: the pickle-ready value of what `torch.cuda.memory._snapshot()`
 * returns, made up, no GPU needed.
 *
 * Note [Bench workload]: a few thousand long-lived blocks first (weights, 1
 * to 256 MiB), then a stream of allocations and frees on three streams: 60%
 * of requests under 1 MiB, 30% from 1 to 64 MiB, 10% from 64 MiB to 1 GiB,
 * scaled by a "sequence length" factor that changes every 20,000 events
 * (variable shapes are what fragments a caching allocator); frees mostly in
 * reverse order of allocation, a third of them of a random live block; live
 * requested bytes held under 48 GiB. Every free is recorded as PyTorch
 * records it, free_requested then free_completed. Each event carries a
 * frames list of shared frame dicts, as PyTorch's symbolized tracebacks do.
 */
import type { PickleDict, PickleValue } from '../../src/replay/read/pickle/index.js';
import { random } from './random.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

/** Build the snapshot value (see Note [Bench workload]). */
export function makeBenchSnapshot(events: number, seed = 8): PickleValue {
  const rnd = random(seed);
  const logUniform = (lo: number, hi: number) =>
    Math.exp(Math.log(lo) + rnd() * (Math.log(hi) - Math.log(lo)));
  const streams = [0, 0x5600_0a00_1000, 0x5600_0a00_2000];
  const files = ['model.py', 'attention.py', 'mlp.py', 'optimizer.py', 'train.py', 'functional.py'];
  const framePool = Array.from({ length: 400 }, (_, i) => ({
    filename: `/opt/venv/lib/python3.11/site-packages/workload/${files[i % files.length]}`,
    line: 10 + ((i * 37) % 900),
    name: `fn_${i}`,
  }));
  const stacks = Array.from({ length: 150 }, () =>
    Array.from({ length: 3 + Math.floor(rnd() * 6) }, () => framePool[Math.floor(rnd() * framePool.length)]),
  );
  const trace: PickleDict[] = [];
  let time = 1_733_000_000_000_000;
  const base = 0x7f00_0000_0000;
  let bump = base;
  const freeAddresses = new Map<number, number[]>();
  const live: { addr: number; size: number; stream: number; key: number }[] = [];
  let liveBytes = 0;
  const budget = 48 * GiB;

  const emit = (action: string, addr: number, size: number, stream: number, stack: number) => {
    time += 1 + Math.floor(rnd() * 40);
    trace.push({ action, addr, size, stream, time_us: time, frames: [...stacks[stack]] });
  };
  const alloc = (size: number, stream: number) => {
    // Addresses come back at the same rounded size, as a caching allocator reuses blocks.
    const key = Math.ceil(size / (2 * MiB));
    const reuse = freeAddresses.get(key);
    const addr = reuse !== undefined && reuse.length > 0 ? reuse.pop()! : bump;
    if (addr === bump) bump += key * 2 * MiB;
    live.push({ addr, size, stream, key });
    liveBytes += size;
    emit('alloc', addr, size, stream, Math.floor(rnd() * stacks.length));
  };
  const freeAt = (i: number) => {
    const b = live[i];
    live[i] = live[live.length - 1];
    live.pop();
    liveBytes -= b.size;
    const stack = Math.floor(rnd() * stacks.length);
    emit('free_requested', b.addr, b.size, b.stream, stack);
    emit('free_completed', b.addr, b.size, b.stream, stack);
    let list = freeAddresses.get(b.key);
    if (list === undefined) freeAddresses.set(b.key, (list = []));
    list.push(b.addr);
  };

  // Weights: allocated once, never freed.
  for (let i = 0; i < 3000 && liveBytes < 16 * GiB; i++) alloc(Math.round(logUniform(MiB, 256 * MiB)), 0);
  const persistent = live.length;
  let scale = 1;
  while (trace.length < events) {
    if (trace.length % 20_000 < 3) scale = 0.25 + rnd() * 1.75;
    const transient = live.length - persistent;
    const wantFree = transient > 0 && (liveBytes > budget || rnd() < 0.48);
    if (!wantFree || trace.length + 2 > events) {
      if (trace.length + 1 > events) break;
      const r = rnd();
      const size =
        r < 0.6
          ? logUniform(512, MiB)
          : r < 0.9
            ? logUniform(MiB, 64 * MiB) * scale
            : logUniform(64 * MiB, GiB) * scale;
      const u = rnd();
      alloc(Math.max(1, Math.round(size)), streams[u < 0.8 ? 0 : u < 0.9 ? 1 : 2]);
    } else {
      // Mostly the newest block (reverse order), a third of the time any live one.
      const i = rnd() < 0.66 ? live.length - 1 : persistent + Math.floor(rnd() * transient);
      freeAt(i);
    }
  }
  return {
    segments: [],
    device_traces: [trace],
    allocator_settings: { PYTORCH_CUDA_ALLOC_CONF: null, max_split_size: -1, expandable_segments: false },
    external_annotations: [],
  };
}
