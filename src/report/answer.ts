/**
 * The report's opening: the answer to the question a snapshot is brought
 * with. What the recorded run really reserved (its own segment events)
 * beside each allocator's peak, what each would save, whether each fits
 * under the memory limit and where it runs out, the advised setting, what
 * became of a recorded OOM, and, for a run that ran out, the address space
 * at the failed request: its free pieces and the live blocks between them,
 * with the stacks that allocated those blocks when the snapshot has them.
 */

import { recordedReserved } from '../replay/engine/recorded.js';
import type { OomVerdict } from '../replay/engine/replay.js';
import {
  answerLines,
  asRecordedLines,
  capLines,
  graphLines,
  oomPlace,
  oomState,
  recordedOomLines,
} from '../replay/engine/verdict.js';
import { Action } from '../replay/read/snapshot.js';
import { allocConfName, vendorGuessOf, vendorLines, vendorOf } from '../replay/read/vendor.js';
import { layoutMap } from './address-map.js';
import type { RecordedReplay } from './collect.js';
import type { LayoutCapture } from './recorder.js';

/** One allocator's line of the answer. */
export interface AnswerRow {
  readonly name: string;
  readonly peakReservedBytes: number;
  /** Recorded peak minus this peak (positive: saves memory); null without a recorded peak. */
  readonly savingBytes: number | null;
  /** savingBytes as a share of the recorded peak. */
  readonly savingFraction: number | null;
  readonly fits: boolean;
  /** The verdict in words (src/replay/engine/verdict.ts). */
  readonly verdict: string;
}

/** The advised setting, from `vmmkit advise`, when the report ran it. */
export interface AnswerAdvice {
  /** The setting to paste; null when no setting fits (the verdict says why). */
  readonly allocConf: string | null;
  readonly peakReservedBytes: number;
  readonly ooms: number;
  readonly verdict: string;
  /** The limit advise searched under (given, or the least the recording allows); null: none. */
  readonly memoryLimit?: number | null;
  /** The limit less the most any one device reserves under the setting; null without a limit. */
  readonly headroomBytes?: number | null;
}

/** A free piece of the address space at a failed request, with the blocks on either side. */
export interface OomPiece {
  readonly address: number;
  readonly size: number;
  /** The live blocks just below and just above it (what keeps it from merging with its neighbours). */
  readonly pinnedBy: readonly PinningBlock[];
}

export interface PinningBlock {
  readonly address: number;
  readonly size: number;
  /** The frames that allocated it, innermost first ("name (file:line)"); empty when not recorded. */
  readonly stack: readonly string[];
}

/** An allocator's first failed request, drawn. */
export interface OomMap {
  readonly allocator: string;
  readonly device: number;
  readonly sentence: string;
  readonly svg: string;
  /** The largest free pieces, largest first (at most MAX_PIECES). */
  readonly pieces: readonly OomPiece[];
  /** All free pieces the map shows, and their bytes. */
  readonly pieceCount: number;
  readonly freeBytes: number;
}

export interface ReportAnswer {
  /** The recording reproduced, in words: the answer's first line (Note [As recorded]). */
  readonly asRecorded: readonly string[];
  /** The cap in force: given, inferred from the recording, or none. */
  readonly cap: readonly string[];
  readonly recordedPeakBytes: number | null;
  readonly memoryLimit: number | null;
  readonly allocConf: string | null;
  readonly rows: readonly AnswerRow[];
  readonly advice: AnswerAdvice | null;
  /** The variable its settings go in: PYTORCH_NPU_ALLOC_CONF on a torch_npu snapshot (Note [Snapshot vendor]). */
  readonly allocConfName?: string;
  /** What became of the trace's own recorded OOM requests, in words. */
  readonly recordedOoms: readonly string[];
  /** What the recording and the snapshot's private pools leave open (Note [Recording CUDA graphs]), as replay's notes say it. */
  readonly notes?: readonly string[];
  readonly oomMaps: readonly OomMap[];
}

const MAX_PIECES = 8;

/** The stack of a plan block on a device (undefined: the snapshot has none for it). */
export type StackOf = (device: number, block: number) => readonly string[] | undefined;

/** Frames shown per pinning block: the innermost ones, where the allocation happened. */
const STACK_FRAMES = 8;

/**
 * The allocating stack of each plan block, from the snapshot's interned
 * stacks: the frames of the block's alloc event, or, for a block live before
 * the trace began, those the final `segments` list gives the block at its
 * address. Python frames are shown (where the program allocated it); a
 * stack of C++ frames alone shows those with a file.
 */
export function snapshotStacks(recorded: Pick<RecordedReplay, 'snapshot' | 'plan'>): StackOf {
  const { snapshot, plan } = recorded;
  const byDevice = new Map<number, (block: number) => number>();
  for (const d of plan.devices) {
    const allocEvent = new Int32Array(d.blockCount).fill(-1);
    const { action, stack } = d.trace;
    for (let i = 0; i < d.trace.length; i++) if (action[i] === Action.alloc) allocEvent[d.blockOf[i]] = i;
    const atEnd = new Map<number, number>();
    for (const seg of snapshot.segments)
      if (seg.device === d.device)
        for (const b of seg.blocks) if (b.stack >= 0) atEnd.set(b.address, b.stack);
    const initialAt = new Map<number, number>();
    for (let k = 0; k < d.initialBlocks.length; k++) initialAt.set(d.initialBlocks[k], d.initialAddress[k]);
    byDevice.set(d.device, (block) => {
      const e = allocEvent[block];
      if (e >= 0 && stack !== undefined) return stack[e];
      const at = initialAt.get(block);
      return at === undefined ? -1 : (atEnd.get(at) ?? -1);
    });
  }
  return (device, block) => {
    const s = byDevice.get(device)?.(block) ?? -1;
    if (s < 0 || snapshot.stacks === undefined) return undefined;
    const frames = [...snapshot.stacks[s]].map((f) => snapshot.frames[f]);
    // The program's own (Python) frames say where the tensor came from; C++ frames only when there are none.
    const python = frames.filter((f) => f.filename.endsWith('.py'));
    const shown = python.length > 0 ? python : frames.filter((f) => f.filename !== '' && f.filename !== '??');
    return shown.slice(0, STACK_FRAMES).map((f) => `${f.name} (${f.filename}:${f.line})`);
  };
}

/** The answer from a recorded replay (and the advice, when the report asked for it). */
export function reportAnswer(
  recorded: RecordedReplay,
  options: { readonly advice?: AnswerAdvice; readonly stackOf?: StackOf; readonly colors: readonly string[] },
): ReportAnswer {
  const { result, runs, plan, answer } = recorded;
  const words = answerLines(answer);
  const perDevice = plan.devices.map((d) => recordedReserved(d, d.startState.reservedBytes));
  const recordedPeakBytes = perDevice.some((r) => r.hasSegmentEvents)
    ? perDevice.reduce((s, r) => s + r.peakBytes, 0)
    : null;
  const limit = result.memoryLimit;
  const rows = result.allocators.map((a, i): AnswerRow => {
    const saving = recordedPeakBytes === null ? null : recordedPeakBytes - a.peakReservedBytes;
    return {
      name: a.name,
      peakReservedBytes: a.peakReservedBytes,
      savingBytes: saving,
      savingFraction: saving === null || recordedPeakBytes === 0 ? null : saving / (recordedPeakBytes ?? 1),
      fits: answer.answers[i].verdict !== 'runs-out' && a.error === undefined,
      verdict: words[i],
    };
  });
  const oomMaps: OomMap[] = [];
  // Walked only when some run ran out of memory.
  let stackOf: StackOf | undefined;
  runs.forEach(({ run, recordings }, i) => {
    const oom = run.firstOom;
    if (oom === null) return;
    const rec = recordings.find((r) => r.device === oom.device);
    if (rec?.oomLayout === undefined) return;
    stackOf ??= options.stackOf ?? snapshotStacks(recorded);
    oomMaps.push(oomMap(run.name, oom, rec.oomLayout, options.colors[i % options.colors.length], stackOf));
  });
  return {
    asRecorded: [...asRecordedLines(answer.asRecorded), ...vendorLines(vendorGuessOf(recorded.snapshot))],
    allocConfName: allocConfName(vendorOf(recorded.snapshot)),
    cap: capLines(answer.cap, answer.asRecorded),
    recordedPeakBytes,
    memoryLimit: limit ?? null,
    allocConf: result.allocConf ?? null,
    rows,
    advice: options.advice ?? null,
    recordedOoms: recordedOomLines(result),
    notes: graphLines(plan, recorded.snapshot),
    oomMaps,
  };
}

function oomMap(
  name: string,
  oom: OomVerdict,
  layout: LayoutCapture,
  color: string,
  stackOf: StackOf | undefined,
): OomMap {
  const { svg } = layoutMap(layout.description, {
    blocks: layout.blocks,
    color,
    title: `${name}, device ${oom.device}, at the failed request (event ${oom.event.toLocaleString('en-US')})`,
    attributes: { allocator: name, device: String(oom.device), oom: 'true' },
    idPrefix: `oom-${oom.device}-${name}`,
    width: 1200,
  });
  const pieces = freePieces(layout);
  const freeBytes = pieces.reduce((s, p) => s + p.size, 0);
  const top = [...pieces].sort((a, b) => b.size - a.size || a.address - b.address).slice(0, MAX_PIECES);
  return {
    allocator: name,
    device: oom.device,
    sentence: `${name} runs out of memory ${oomPlace(oom)}: ${oomState(oom)}`,
    svg,
    pieceCount: pieces.length,
    freeBytes,
    pieces: top.map((p) => ({
      address: p.address,
      size: p.size,
      pinnedBy: [p.below, p.above]
        .filter((b) => b !== undefined)
        .map((b) => ({
          address: b.address,
          size: b.size,
          stack: (b.block === undefined ? undefined : stackOf?.(oom.device, b.block)) ?? [],
        })),
    })),
  };
}

/** A free run of mapped bytes and the live blocks of the same mapped run just below and above it. */
interface FreeRun {
  readonly address: number;
  readonly size: number;
  readonly below: LayoutCapture['blocks'][number] | undefined;
  readonly above: LayoutCapture['blocks'][number] | undefined;
}

/**
 * Mapped bytes no live block covers, as maximal runs: the free pieces of the
 * address space. Blocks count at their requested size, so a piece may include
 * the rounding slack of the block below it.
 */
export function freePieces(layout: LayoutCapture): FreeRun[] {
  const mapped: [number, number][] = [];
  for (const r of layout.description.reservations)
    for (const m of r.mappings) mapped.push([m.va, m.va + m.size]);
  mapped.sort((a, b) => a[0] - b[0]);
  const runs: [number, number][] = [];
  for (const [a, b] of mapped) {
    const last = runs[runs.length - 1];
    if (last !== undefined && last[1] === a) last[1] = b;
    else runs.push([a, b]);
  }
  const blocks = layout.blocks;
  const out: FreeRun[] = [];
  let k = 0;
  for (const [start, end] of runs) {
    while (k < blocks.length && blocks[k].address + blocks[k].size <= start) k++;
    let at = start;
    let below: FreeRun['below'];
    for (; k < blocks.length && blocks[k].address < end; k++) {
      const b = blocks[k];
      if (b.address > at) out.push({ address: at, size: b.address - at, below, above: b });
      at = Math.max(at, b.address + b.size);
      below = b;
    }
    if (at < end) out.push({ address: at, size: end - at, below, above: undefined });
  }
  return out;
}
