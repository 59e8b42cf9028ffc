/**
 * What-if answers in words: for each allocator of a replay, whether it ran
 * out of memory (where, asking for what, holding what) or fitted (its peak,
 * against the memory limit when there is one), and what became of the
 * trace's own recorded OOM requests. The replay CLI prints these lines and
 * the report opens with them.
 */
import { formatBytes } from '../../util/format.js';
import type { AllocatorRun, OomVerdict, ReplayResult } from './replay.js';

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
    const of = limit === undefined ? '' : ` of ${formatBytes(limit)}`;
    return `${a.name} fits, peak ${formatBytes(a.peakReservedBytes)}${of}`;
  }
  const more = a.ooms > 1 ? `; ${(a.ooms - 1).toLocaleString('en-US')} more request(s) failed after it` : '';
  return `${a.name} runs out of memory ${oomPlace(oom)}: ${oomState(oom)}${more}`;
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
