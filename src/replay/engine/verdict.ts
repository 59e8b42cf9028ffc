/**
 * What-if answers in words: for each allocator of a replay, whether it ran
 * out of memory (where, asking for what, holding what) or fitted (its peak,
 * against the memory limit when there is one), and what became of the
 * trace's own recorded OOM requests. The replay CLI prints these lines and
 * the report opens with them.
 */
import { formatBytes } from '../../util/format.js';
import type { MemorySnapshot } from '../read/snapshot.js';
import type { AsRecorded, AsRecordedDevice } from './as-recorded.js';
import type { AllocatorRun, OomVerdict, ReplayResult } from './replay.js';
import type { TracePlan } from './trace-plan.js';
import type { CapInForce, WhatIfAnswer } from './what-if.js';

/** One sentence per allocator: "pytorch-native runs out of memory at event 38,706: ...". */
export function verdictLines(result: ReplayResult): string[] {
  const limit = result.memoryLimit;
  return result.allocators.map((a) => verdictOf(a, limit));
}

/** The sentence for one allocator's run. */
export function verdictOf(a: AllocatorRun, limit: number | undefined): string {
  if (a.error !== undefined) return `${a.name} could not be replayed: ${a.error}`;
  const oom = a.firstOom;
  if (oom === null) {
    if (a.devices.length > 1)
      return `${a.name} fits, ${peaksOnDevices(a, limit === undefined ? undefined : formatBytes(limit))}`;
    const of = limit === undefined ? '' : ` of ${formatBytes(limit)}`;
    return `${a.name} fits, peak ${formatBytes(a.peakReservedBytes)}${of}`;
  }
  const more = a.ooms > 1 ? `; ${(a.ooms - 1).toLocaleString('en-US')} more request(s) failed after it` : '';
  return `${a.name} runs out of memory ${oomPlace(oom)}: ${oomState(oom)}${more}`;
}

/**
 * A run that fits on several devices, each with its memory and its limit
 * (`limit`, in words, where one is given): each device's peak, then their
 * sum (the table's figure).
 */
function peaksOnDevices(a: AllocatorRun, limit: string | undefined): string {
  const each = a.devices.map((d) => `device ${d.device} ${formatBytes(d.peakReservedBytes)}`).join(', ');
  return `peak ${each}${limit === undefined ? '' : ` of ${limit} each`} (${formatBytes(a.peakReservedBytes)} together)`;
}

/** "at event 38,706" (with the device when not 0), or "before the first event". */
export function oomPlace(oom: OomVerdict): string {
  const where = oom.event < 0 ? 'before the first event' : `at event ${oom.event.toLocaleString('en-US')}`;
  return oom.device === 0 ? where : `${where} of device ${oom.device}`;
}

/** "a 1.55 GiB request with 12.3 GiB reserved, 2.1 GiB of it free in 34 pieces, the largest 0.9 GiB". */
export function oomState(oom: OomVerdict): string {
  const what = `a ${formatBytes(oom.bytes)} request${oom.recorded ? " (the trace's own recorded OOM)" : ''}`;
  const held = `with ${formatBytes(oom.reservedBytes)} reserved`;
  if (oom.freePieces === 0) return `${what} ${held}, none of it free`;
  const largest = oom.freePieces > 1 ? `, the largest ${formatBytes(oom.largestFreeBytes)}` : '';
  const pieces =
    oom.freePieces === 1 ? 'in one piece' : `in ${oom.freePieces.toLocaleString('en-US')} pieces`;
  return `${what} ${held}, ${formatBytes(oom.freeBytes)} of it free ${pieces}${largest}`;
}

/** What became of the trace's own OOM requests under each allocator (empty when the trace has none). */
export function recordedOomLines(result: ReplayResult): string[] {
  const out: string[] = [];
  for (const a of result.allocators) {
    for (const d of a.devices) {
      for (const r of d.recordedOoms) {
        const at = `the recorded OOM at event ${r.event.toLocaleString('en-US')}${d.device === 0 ? '' : ` of device ${d.device}`} (${formatBytes(r.bytes)})`;
        out.push(`${a.name}: ${at} ${r.served ? 'would have succeeded' : 'fails here too'}`);
      }
    }
  }
  return out;
}

/**
 * The answer's first line: whether the recording was reproduced, and where
 * it was not, the first difference (Note [As recorded]).
 */
export function asRecordedLines(ar: AsRecorded): string[] {
  const several = ar.devices.length > 1;
  const on = (d: AsRecordedDevice) => (several ? `device ${d.device}: ` : '');
  const facts = (d: AsRecordedDevice) => {
    const ooms = d.recordedOoms.map(
      (o) => `OOM at event ${o.event.toLocaleString('en-US')}: ${formatBytes(o.bytes)}`,
    );
    return `${on(d)}peak ${formatBytes(d.recordedPeakBytes)}${ooms.length > 0 ? `, ${ooms.join(', ')}` : ''}`;
  };
  const source =
    ar.settingsSource === 'allocator_settings'
      ? ''
      : ar.settingsSource === 'segment_map events'
        ? ` (no settings recorded; ${ar.settings.npu === undefined ? '' : "torch_npu's defaults, "}expandable segments, as its segment_map events show)`
        : ` (no settings recorded; ${ar.settings.npu === undefined ? 'the defaults' : "torch_npu's defaults"})`;
  if (ar.devices.every((d) => !d.checked))
    return [
      'as recorded: nothing to check (the trace has no segment events, so it says nothing of reserved memory)',
    ];
  if (ar.reproduced) return [`as recorded: reproduced (${ar.devices.map(facts).join('; ')})${source}`];
  const out = [
    `as recorded: NOT reproduced on ${ar.devices
      .filter((d) => !d.reproduced)
      .map((d) => `device ${d.device}`)
      .join(', ')}${source}; what-ifs below inherit the difference`,
  ];
  for (const d of ar.devices) {
    if (d.reproduced) out.push(`  ${facts(d)}: reproduced`);
    else out.push(`  ${facts(d)}: ${d.differences[0]}`);
  }
  return out;
}

/** The cap in force: given, inferred from the recording (with what bounds it), or none (Note [The recorded cap]). */
export function capLines(cap: CapInForce, ar: AsRecorded): string[] {
  if (cap.kind === 'given')
    return [`memory limit: ${formatBytes(cap.devices[0]?.highBytes ?? 0)} per device (given)`];
  if (cap.kind === 'none') return ['cap: none given, and the recording shows none (no OOM)'];
  const out: string[] = [];
  for (const d of ar.devices) {
    if (!Number.isFinite(d.cap.highBytes)) continue;
    const where = ar.devices.length > 1 ? ` on device ${d.device}` : '';
    const oom = d.cap.ooms[0];
    const why =
      oom === undefined
        ? 'its retries and the frees that made room'
        : `the OOM at event ${oom.event.toLocaleString('en-US')} needed ${formatBytes(oom.needBytes)} with ${formatBytes(oom.reservedBytes)} reserved`;
    const full =
      oom !== undefined && d.cap.deviceFull && oom.deviceFreeBytes !== null
        ? `; the device itself had ${formatBytes(oom.deviceFreeBytes)} free, so the cap was the device's memory less what others held`
        : '';
    out.push(
      `cap${where}: inferred from the recording: ${formatBytes(d.cap.lowBytes)} to ${formatBytes(d.cap.highBytes + 1)} (${why}${full}); every answer below holds for any cap in it (--memory-limit sets one)`,
    );
  }
  return out;
}

/** One sentence per allocator over the cap in force (Note [Answers over an interval], [Answers from a late start]). */
export function answerLines(answer: WhatIfAnswer): string[] {
  const inferred = answer.cap.kind === 'inferred';
  return answer.answers.map((x, i) => {
    const run = answer.result.allocators[i];
    if (run.error !== undefined) return `${x.name} could not be replayed: ${run.error}`;
    const estimates =
      x.peakLowBytes === x.peakHighBytes
        ? `${formatBytes(x.peakHighBytes)} from both the recorded and a compacted start`
        : `${formatBytes(x.peakLowBytes)} to ${formatBytes(x.peakHighBytes)} from a compacted and from the recorded start`;
    const peak = x.exact
      ? `peak ${formatBytes(x.peakHighBytes)}`
      : `peak at least ${formatBytes(x.atLeastBytes ?? 0)} (its live blocks on 2 MiB pages), estimated ${estimates}: the snapshot starts mid-run, and what these settings would have made of the unrecorded past can raise it`;
    if (x.verdict === 'fits') {
      const given = answer.cap.kind === 'given' ? formatBytes(answer.cap.devices[0].highBytes) : undefined;
      if (x.exact && run.devices.length > 1 && run.peakReservedBytes === x.peakHighBytes)
        return inferred
          ? `${x.name} fits under any cap in that interval, ${peaksOnDevices(run, undefined)}`
          : `${x.name} fits, ${peaksOnDevices(run, given)}`;
      if (inferred) return `${x.name} fits under any cap in that interval, ${peak}`;
      return `${x.name} fits, ${peak}${given === undefined ? '' : ` of ${given}`}`;
    }
    if (x.verdict === 'runs-out') {
      const oom = run.firstOom;
      const more =
        run.ooms > 1 ? `; ${(run.ooms - 1).toLocaleString('en-US')} more request(s) failed after it` : '';
      const what = oom === null ? '' : ` ${oomPlace(oom)}: ${oomState(oom)}${more}`;
      return `${x.name} runs out of memory${inferred ? ' under any cap in that interval' : ''}${what}`;
    }
    const at = (x.thresholdBytes ?? []).map((t) =>
      answer.asRecorded.devices.length > 1
        ? `${formatBytes(t.bytes)} on device ${t.device}`
        : formatBytes(t.bytes),
    );
    return `${x.name} fits only if the cap is at least ${at.join(', ')}; below that it runs out (${peak} at the top of the interval)`;
  });
}

/**
 * Runs of segment frees taken for empty_cache() that were OOM retries had
 * the cap been lower (Note [The recorded cap]): the trace cannot tell the
 * two apart, so the answer says which it took and what would change it.
 */
export function ambiguousRunLines(answer: WhatIfAnswer): string[] {
  const out: string[] = [];
  for (const d of answer.asRecorded.devices) {
    const limit = answer.limits[d.device] ?? Number.POSITIVE_INFINITY;
    const taken = d.cap.runs.filter((r) => Number.isFinite(r.retryBelowBytes) && r.retryBelowBytes <= limit);
    const could = taken.filter((r) => r.retryBelowBytes > d.cap.peakBytes);
    if (could.length === 0) continue;
    const below = Math.max(...could.map((r) => r.retryBelowBytes));
    const where = answer.asRecorded.devices.length > 1 ? ` on device ${d.device}` : '';
    out.push(
      `${could.length} run(s) of segment frees${where} before a new segment were taken for empty_cache() calls; under a cap below ${formatBytes(below)} some would have been OOM retries instead (the trace cannot tell; --memory-limit decides)`,
    );
  }
  return out;
}

/**
 * Note [Recording CUDA graphs]: a snapshot with private pools is answered as
 * any other, but its reader should know what the recording itself changes,
 * and what the snapshot cannot say. PyTorch's allocator keeps history beside
 * its decisions: recordHistory sets what is remembered, and malloc's search,
 * rounding, splitting and merging read none of it; cudagraph trees read the
 * history flag only to switch recording on around a warm-up or capture when
 * asked to (traces/seeds/README.md cites the sources and an H100 run in which
 * history on and off reserved the same to the byte). What does move a
 * compiled model's memory is its compile run: Inductor tunes kernels at
 * their first launch, which under reduce-overhead is the graph trees'
 * warm-up, into the graphs' private pool; on that H100 a warm compile
 * cache (no tuning) reserved 38 MiB less there than a cold one. So the
 * answer is exact for the process recorded and only as good as that for
 * the next one. What made a pool shows in its id (ATen's MemPool: uid_ and
 * uuid_): a graph captured with no pool given makes its own, (n, 0); one
 * that graph_pool_handle() or torch.cuda.MemPool() made, for graphs to share
 * or for a MemPool, is (0, n), and a snapshot cannot tell those two apart;
 * torch.compile's graph trees share a (0, n) pool, and show in the stacks
 * (frames in _inductor/cudagraph_trees.py). A MemPool with an allocator of
 * its own (vLLM's sleep mode keeps its weights and KV cache in two, as
 * volcengine/verl's mem.pickle shows) is replayed as a pool of PyTorch's own
 * (Note [Private pools]), which it is not; the line says so where a (0, n)
 * pool is not known to be graphs'.
 */
export function graphLines(plan: TracePlan, snapshot: MemorySnapshot): string[] {
  const ids = snapshot.segments.flatMap((s) =>
    s.poolId !== undefined && (s.poolId[0] !== 0 || s.poolId[1] !== 0) ? [s.poolId] : [],
  );
  if (plan.privatePoolBlocks === 0 && ids.length === 0) return [];
  const blocks = `${plan.privatePoolBlocks.toLocaleString('en-US')} block(s) allocated in them`;
  const compiled = snapshot.frames.some((f) =>
    f.filename.replaceAll('\\', '/').includes('_inductor/cudagraph_trees.py'),
  );
  const history = "recording history does not change PyTorch's allocation decisions";
  const compileRun =
    "a compiled model's memory follows its compile run (a cold compile cache tunes kernels inside the graphs' pool; a warm one does not)";
  if (compiled)
    return [
      `the snapshot shows the CUDA graph pools of a compiled model (${blocks}): ${history}, but ${compileRun}, so these answers are exact for this process and only as good as that for the next`,
    ];
  const graphsOwn = ids.some((id) => id[0] !== 0);
  const shared = ids.some((id) => id[0] === 0);
  const what = graphsOwn
    ? shared
      ? 'CUDA graph pools, and pools that graph_pool_handle() or torch.cuda.MemPool() made (a snapshot does not say which)'
      : 'CUDA graph pools'
    : 'private pools that graph_pool_handle() or torch.cuda.MemPool() made (a snapshot does not say which)';
  const memPool =
    shared || !graphsOwn
      ? "; replay serves them as PyTorch's own pools, which a MemPool with an allocator of its own (vLLM's sleep mode has one) is not"
      : '';
  return [
    `the snapshot shows ${what} (${blocks}): ${history}, but where they hold a compiled model's graphs, ${compileRun}${memPool}`,
  ];
}
