/**
 * Two snapshots of one job, before and after a change, compared at their
 * peaks: reserved and allocated bytes, the categories and the stacks that
 * hold memory, as recorded and, where a setting or a limit is given, as
 * each would have run under it (the engine replays both; no second
 * recording is needed).
 *
 * Note [Stacks across snapshots]: a stack's index means nothing outside
 * its snapshot, so two snapshots' stacks are matched by their frames'
 * functions and files, innermost first, without line numbers: the change
 * being compared often moves lines, and a stack that only moved should
 * read as the same stack. Two stacks of one snapshot that differ only in
 * lines are counted together on that side.
 */
import type { StartProcess } from '../engine/process-start.js';
import type { TracePlan } from '../engine/trace-plan.js';
import type { Verdict } from '../engine/what-if.js';
import type { MemorySnapshot } from '../read/snapshot.js';
import {
  CATEGORY_LABELS,
  MEMORY_CATEGORIES,
  type MemoryCategory,
  stackLines,
  stackSummary,
} from './categories.js';
import { type HeldState, liveBlocks, type Slack, slackOf } from './held.js';
import { analyseWithStates, type PeakAnalysis, type PeakBreakdown } from './peak.js';

export interface CompareOptions {
  readonly allocConf?: string;
  readonly memoryLimit?: number;
  /** Starts each replay's process (process-start.ts): the caller's, such as a simulated H200. */
  readonly startProcess: StartProcess;
  /** How many stacks to list (default 10). */
  readonly topStacks?: number;
  /** The two snapshots' plans (planReplay), made once by the caller. */
  readonly plans: readonly [TracePlan, TracePlan];
}

/** One side's figures at a device's peak. */
export interface SideFigures {
  /** Peak reserved bytes, as the as-recorded reproduction reports them. */
  readonly reservedBytes: number;
  /** Requested bytes live at that peak's fullest moment. */
  readonly allocatedBytes: number;
  /** The trace's own peak of requested bytes, at whatever moment. */
  readonly peakAllocatedBytes: number;
  readonly reproduced: boolean;
  readonly slack: Slack | null;
}

export interface CategoryComparison {
  readonly category: MemoryCategory;
  readonly label: string;
  readonly aBytes: number;
  readonly bBytes: number;
  readonly differenceBytes: number;
}

export interface StackComparison {
  readonly summary: string;
  readonly frames: readonly string[];
  readonly category: MemoryCategory;
  readonly aBytes: number;
  readonly bBytes: number;
  readonly differenceBytes: number;
}

/** Both snapshots replayed under the setting: their peaks there. */
export interface SettingComparison {
  readonly aPeakBytes: number;
  readonly bPeakBytes: number;
  readonly differenceBytes: number;
  readonly aAllocatedBytes: number;
  readonly bAllocatedBytes: number;
  readonly aSlack: Slack;
  readonly bSlack: Slack;
}

export interface DeviceComparison {
  readonly device: number;
  readonly a: SideFigures;
  readonly b: SideFigures;
  readonly reservedDifferenceBytes: number;
  readonly allocatedDifferenceBytes: number;
  readonly categories: readonly CategoryComparison[];
  /** The stacks whose live bytes at the peak changed most, largest change first (Note [Stacks across snapshots]). */
  readonly stacks: readonly StackComparison[];
  readonly underSetting: SettingComparison | null;
}

export interface SnapshotComparison {
  readonly setting: { readonly allocConf: string | null; readonly memoryLimit: number | null } | null;
  /** Each side's verdict under the setting (null without one). */
  readonly verdicts: { readonly a: Verdict; readonly b: Verdict } | null;
  readonly a: PeakBreakdown;
  readonly b: PeakBreakdown;
  /** Devices both snapshots have, in order. */
  readonly devices: readonly DeviceComparison[];
  /** Devices only one side has. */
  readonly onlyInA: readonly number[];
  readonly onlyInB: readonly number[];
}

/** Compare snapshot `a` (before) with `b` (after) at their peaks, and under a setting where one is given. */
export function compareSnapshots(
  a: MemorySnapshot,
  b: MemorySnapshot,
  options: CompareOptions,
): SnapshotComparison {
  const top = Math.max(0, options.topStacks ?? 10);
  const analyse = (s: MemorySnapshot, plan: TracePlan) =>
    analyseWithStates(s, {
      plan,
      allocConf: options.allocConf,
      memoryLimit: options.memoryLimit,
      startProcess: options.startProcess,
      topStacks: top,
    });
  const x = analyse(a, options.plans[0]);
  const y = analyse(b, options.plans[1]);
  const devicesA = x.breakdown.devices.map((d) => d.device);
  const devicesB = y.breakdown.devices.map((d) => d.device);
  const both = devicesA.filter((d) => devicesB.includes(d));
  const asked = options.allocConf !== undefined || options.memoryLimit !== undefined;
  return {
    setting: asked
      ? { allocConf: options.allocConf ?? null, memoryLimit: options.memoryLimit ?? null }
      : null,
    verdicts:
      x.breakdown.whatIf !== null && y.breakdown.whatIf !== null
        ? { a: x.breakdown.whatIf.verdict, b: y.breakdown.whatIf.verdict }
        : null,
    a: x.breakdown,
    b: y.breakdown,
    devices: both.map((device) => deviceComparison(device, x, y, a, b, top)),
    onlyInA: devicesA.filter((d) => !devicesB.includes(d)),
    onlyInB: devicesB.filter((d) => !devicesA.includes(d)),
  };
}

function deviceComparison(
  device: number,
  x: PeakAnalysis,
  y: PeakAnalysis,
  a: MemorySnapshot,
  b: MemorySnapshot,
  top: number,
): DeviceComparison {
  const side = (p: PeakAnalysis, s: MemorySnapshot): SideFigures => {
    const d = p.breakdown.devices.find((e) => e.device === device);
    const trace = s.traces.find((t) => t.device === device);
    return {
      reservedBytes: d?.reservedBytes ?? 0,
      allocatedBytes: d?.allocatedBytes ?? 0,
      peakAllocatedBytes: trace === undefined ? 0 : peakRequested(p, device),
      reproduced: d?.reproduced ?? false,
      slack: d?.slack ?? null,
    };
  };
  const sa = side(x, a);
  const sb = side(y, b);
  const catA = x.breakdown.devices.find((e) => e.device === device)?.categories ?? [];
  const catB = y.breakdown.devices.find((e) => e.device === device)?.categories ?? [];
  const categories = MEMORY_CATEGORIES.map((category) => {
    const aBytes = catA.find((c) => c.category === category)?.bytes ?? 0;
    const bBytes = catB.find((c) => c.category === category)?.bytes ?? 0;
    return { category, label: CATEGORY_LABELS[category], aBytes, bBytes, differenceBytes: bBytes - aBytes };
  });
  const stateOf = (states: readonly HeldState[] | null) => states?.find((s) => s.device === device) ?? null;
  const ra = stateOf(x.recorded);
  const rb = stateOf(y.recorded);
  const stacks = stackRows(a, ra, x, b, rb, y, top);
  const wa = stateOf(x.whatIf);
  const wb = stateOf(y.whatIf);
  const requested = (s: HeldState) => liveBlocks(s).reduce((n, k) => n + k.requestedBytes, 0);
  return {
    device,
    a: sa,
    b: sb,
    reservedDifferenceBytes: sb.reservedBytes - sa.reservedBytes,
    allocatedDifferenceBytes: sb.allocatedBytes - sa.allocatedBytes,
    categories,
    stacks,
    underSetting:
      wa === null || wb === null
        ? null
        : {
            aPeakBytes: wa.reservedBytes,
            bPeakBytes: wb.reservedBytes,
            differenceBytes: wb.reservedBytes - wa.reservedBytes,
            aAllocatedBytes: requested(wa),
            bAllocatedBytes: requested(wb),
            aSlack: slackOf(wa),
            bSlack: slackOf(wb),
          },
  };
}

function peakRequested(p: PeakAnalysis, device: number): number {
  return p.plan.devices.find((d) => d.device === device)?.peakRequestedBytes ?? 0;
}

/** A stack's key across snapshots: its frames' functions and files (Note [Stacks across snapshots]). */
function stackKey(s: MemorySnapshot, stack: number): string {
  if (stack < 0) return '';
  return Array.from(s.stacks[stack] ?? [], (i) => `${s.frames[i].name}\u0000${s.frames[i].filename}`).join(
    '\n',
  );
}

function stackRows(
  a: MemorySnapshot,
  ra: HeldState | null,
  x: PeakAnalysis,
  b: MemorySnapshot,
  rb: HeldState | null,
  y: PeakAnalysis,
  top: number,
): StackComparison[] {
  interface Row {
    aBytes: number;
    bBytes: number;
    /** A stack of either side that has the key, to name it, and that side. */
    stack: number;
    from: MemorySnapshot;
    category: MemoryCategory;
  }
  const rows = new Map<string, Row>();
  const add = (s: MemorySnapshot, state: HeldState | null, p: PeakAnalysis, isA: boolean) => {
    if (state === null) return;
    for (const k of liveBlocks(state)) {
      const category = p.categories.ofBlock(k, state.device);
      const key = `${category}|${stackKey(s, k.stack)}`;
      let r = rows.get(key);
      if (r === undefined) {
        r = { aBytes: 0, bBytes: 0, stack: k.stack, from: s, category };
        rows.set(key, r);
      }
      if (isA) r.aBytes += k.requestedBytes;
      else r.bBytes += k.requestedBytes;
    }
  };
  add(a, ra, x, true);
  add(b, rb, y, false);
  return [...rows.values()]
    .map((r) => ({
      summary: stackSummary(r.from, r.stack),
      frames: stackLines(r.from, r.stack),
      category: r.category,
      aBytes: r.aBytes,
      bBytes: r.bBytes,
      differenceBytes: r.bBytes - r.aBytes,
    }))
    .filter((r) => r.differenceBytes !== 0)
    .sort((p, q) => Math.abs(q.differenceBytes) - Math.abs(p.differenceBytes) || q.bBytes - p.bBytes)
    .slice(0, top);
}
