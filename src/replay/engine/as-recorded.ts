/**
 * The recording reproduced: before any what-if, replay the snapshot through
 * PyTorch's allocator as the recording ran it (its settings, its cap) and
 * compare with what the recording itself says it did. Every answer starts
 * here, because an answer about other settings is only as good as the
 * model's answer about these.
 *
 * Note [As recorded]: the settings are the snapshot's allocator_settings;
 * a snapshot without them (older PyTorch) ran with the defaults, except
 * that segment_map events mean expandable segments were on. The cap is the
 * interval the trace allows (cap.ts, Note [The recorded cap]): the run is
 * replayed at the top of it (or with no cap where the trace shows none) and,
 * when there is an interval, at its bottom too, since any cap inside is
 * what the recording may have had. A device is reproduced when, at each
 * cap tried:
 *  - its peak reserved bytes equal the recording's (its own segment events,
 *    from the start state's bytes);
 *  - its segment events agree with the recorded ones in order, action and
 *    size (fidelity.ts);
 *  - each recorded oom fails at its request and no other request fails.
 * Where it differs, the first difference says where and by how much.
 */
import type { PytorchAllocatorSettings } from '../../alloc/pytorch/settings.js';
import { formatBytes } from '../../util/format.js';
import { Action, type MemorySnapshot } from '../read/snapshot.js';
import { settingsOfSnapshot } from '../read/vendor.js';
import { ALLOCATOR_REGISTRY, type AllocatorFactory } from './allocators.js';
import { allocatorRunsUnder, type DeviceCap, inferDeviceCap } from './cap.js';
import { compareWithTrace, type FidelityReport } from './fidelity.js';
import { beforePrivateRequest } from './private-pools.js';
import {
  type AllocatorRun,
  type DeviceRun,
  type OomVerdict,
  type ReplayOptions,
  type ReplayStep,
  replay,
} from './replay.js';
import { type DevicePlan, type TracePlan, withRetries } from './trace-plan.js';

/** Where the settings replayed as recorded came from. */
export type RecordedSettingsSource = 'allocator_settings' | 'segment_map events' | 'defaults';

/** One recorded oom, and whether the replay as recorded failed it too. */
export interface RecordedOomCheck {
  readonly event: number;
  readonly bytes: number;
  readonly reproduced: boolean;
}

export interface AsRecordedDevice {
  readonly device: number;
  /** Whether the replay gave back the recording (true, too, where the trace shows no reserved memory to check). */
  readonly reproduced: boolean;
  /** Whether there was anything to check: the trace shows reserved memory (segment events or a start state). */
  readonly checked: boolean;
  /** The recording's peak reserved bytes (its segment events, from the start state's bytes). */
  readonly recordedPeakBytes: number;
  /** The replay's, at the top of the cap's interval (or with no cap). */
  readonly replayedPeakBytes: number;
  /** The cap's interval and what bounds it. */
  readonly cap: DeviceCap;
  readonly recordedOoms: readonly RecordedOomCheck[];
  /** A request the replay failed that the recording served (the first), or null. */
  readonly unexpectedOom: OomVerdict | null;
  readonly segmentEvents: { readonly recorded: number; readonly replayed: number; readonly matched: number };
  /** Each way the replay differs from the recording, in words; empty when reproduced. */
  readonly differences: readonly string[];
}

export interface AsRecorded {
  readonly reproduced: boolean;
  /** The settings replayed and where they came from (Note [As recorded]). */
  readonly settings: PytorchAllocatorSettings;
  readonly settingsSource: RecordedSettingsSource;
  /** The plan the recording was replayed with (empty_cache() placed for no cap, or the top of the interval). */
  readonly plan: TracePlan;
  /** Whether a recorded oom bounds the cap on any device. */
  readonly capped: boolean;
  readonly devices: readonly AsRecordedDevice[];
  /** Replays this took. */
  readonly replays: number;
  /** The replay the answer is read from (Note [The recording's run, taken again]). */
  readonly final: RecordingRun;
}

/** One replay of the recording: which it was, its run, plan and caps, and whether one allocator served every device. */
export interface RecordingRun {
  /** Its number among the replays this made, as `watch` was told. */
  readonly replay: number;
  readonly run: AllocatorRun;
  readonly plan: TracePlan;
  readonly limits: readonly (number | undefined)[];
  /** Whether it ran PyTorch's allocator in one mode on every device (not a mode per device: perDeviceMode). */
  readonly oneMode: boolean;
  /** Whether `watch` was told of its steps (a replay that may be answered from is; a probe is not). */
  readonly watched: boolean;
}

export type AsRecordedOptions = Pick<ReplayOptions, 'startProcess' | 'costs' | 'backend'> & {
  /** The snapshot's plan (planReplay); its empty_cache() calls are placed anew for each cap. */
  readonly plan: TracePlan;
  /** The cap the recording ran under, where it is known: checked alone, instead of the interval its events allow. */
  readonly recordedLimit?: number;
  /**
   * Told of the steps of each replay that may be the one answered from (the top of the cap, and the top the
   * search moved), by the replay's number; AsRecorded.final says which it was, and whether it was watched.
   */
  readonly watch?: (replay: number) => ((step: ReplayStep) => void) | undefined;
};

/** Page size of every cap decision: segments and mappings are whole 2 MiB pages, so caps differ only by them. */
const PAGE = 2 * 1024 * 1024;

/** Replay `snapshot` as it was recorded and compare with the recording (Note [As recorded]). */
export function reproduceRecording(snapshot: MemorySnapshot, options: AsRecordedOptions): AsRecorded {
  const { settings, source } = recordedSettings(snapshot, options.plan);
  let caps = options.plan.devices.map((d) =>
    inferDeviceCap(d, settings, beforePrivateRequest(snapshot, d.trace, d.blockOf, d.privatePools)),
  );
  const plain = ALLOCATOR_REGISTRY.find((a) => a.name === 'pytorch') as AllocatorFactory;
  const pytorch = perDeviceMode(plain, source, options.plan);
  let replays = 0;
  const { plan: base, recordedLimit: given, watch, ...where } = options;
  const done: Replayed[] = [];
  const collects = settings.garbageCollectionThreshold > 0;
  // Only a replay that may be the one answered from is watched (the top, and the top the search moved):
  // the probes of the search are many on a long OOM-ended trace, and a watcher holds a block table each.
  const at = (limits: readonly (number | undefined)[], watched = false): Replayed => {
    const retries = retriesKey(caps, limits);
    const same = done.find((r) => r.retries === retries && sameRunUnder(r.run, r.limits, limits, collects));
    if (same !== undefined) return same;
    replays++;
    const plan = planUnder(snapshot, base, caps, limits, true);
    const index = done.length;
    const run = replay(snapshot, {
      ...where,
      allocators: [pytorch],
      plan,
      settings,
      keepEvents: true,
      deviceMemoryLimits: limits,
      onStep: watched ? watch?.(index) : undefined,
    }).allocators[0];
    const replayed = { plan, run, limits, retries, index, watched: watched && watch !== undefined };
    done.push(replayed);
    return replayed;
  };
  const byDevice = (f: (c: DeviceCap) => number | undefined) => {
    const out: (number | undefined)[] = [];
    for (const c of caps) out[c.device] = f(c);
    return out;
  };
  // A cap given replaces the interval: the recording is checked under it alone.
  if (given !== undefined)
    caps = caps.map((c) => ({ ...c, lowBytes: given, highBytes: given, hintHighBytes: given }));
  let top = at(
    byDevice((c) => (Number.isFinite(c.highBytes) ? c.highBytes : undefined)),
    true,
  );
  // No oom bounds the cap, yet the run needs one: its retries or collections tell the cap to try.
  const hinted = caps.filter(
    (c) => !Number.isFinite(c.highBytes) && Number.isFinite(c.hintHighBytes) && !reproducedBy(top, c),
  );
  if (hinted.length > 0) {
    caps = caps.map((c) => (hinted.includes(c) ? { ...c, highBytes: c.hintHighBytes } : c));
    top = at(
      byDevice((c) => (Number.isFinite(c.highBytes) ? c.highBytes : undefined)),
      true,
    );
  }
  const capped = caps.some((c) => Number.isFinite(c.highBytes));
  const found =
    capped && given === undefined
      ? searchCaps(caps, top, at, collects)
      : new Map<number, { low: number; high: number }>();
  const bottom =
    capped && given === undefined
      ? at(byDevice((c) => (Number.isFinite(c.highBytes) ? found.get(c.device)?.low : undefined)))
      : undefined;
  // The top again only where the search moved it.
  const moved = [...found].some(([device, r]) => r.high !== caps.find((c) => c.device === device)?.highBytes);
  const final = moved
    ? at(
        byDevice((c) => (Number.isFinite(c.highBytes) ? found.get(c.device)?.high : undefined)),
        true,
      )
    : top;

  const devices: AsRecordedDevice[] = [];
  for (const c of caps) {
    const runTop = final.run.devices.find((r) => r.device === c.device);
    if (runTop === undefined) continue; // a device slot with nothing to replay
    const range = found.get(c.device);
    const cap = { ...c, lowBytes: range?.low ?? c.lowBytes, highBytes: range?.high ?? c.highBytes };
    const bounded = Number.isFinite(cap.highBytes) && given === undefined;
    const f = compareWithTrace(final.plan.devices[c.device], runTop);
    const where = bounded ? ' at the top of the cap' : '';
    const differences = !cap.seen
      ? []
      : differencesOf(final.plan, cap.device, runTop, cap.peakBytes, where, f);
    const runBottom = bottom?.run.devices.find((r) => r.device === c.device);
    if (runBottom !== undefined && bounded && bottom !== undefined)
      for (const x of differencesOf(
        bottom.plan,
        cap.device,
        runBottom,
        cap.peakBytes,
        ' at the bottom of the cap',
      ))
        differences.push(x);
    if (final.run.error !== undefined) differences.push(`the replay failed: ${final.run.error}`);
    if (cap.highBytes < cap.peakBytes && !cap.deviceFull)
      differences.push(
        `the recording's own events disagree on its cap: it reserved ${formatBytes(cap.peakBytes)}, yet a request failed under ${formatBytes(cap.highBytes + 1)}`,
      );
    devices.push({
      device: cap.device,
      reproduced: differences.length === 0,
      checked: cap.seen,
      recordedPeakBytes: cap.peakBytes,
      replayedPeakBytes: runTop.peakReservedBytes,
      cap,
      recordedOoms: runTop.recordedOoms.map((o) => ({
        event: o.event,
        bytes: o.bytes,
        reproduced: !o.served,
      })),
      unexpectedOom: runTop.firstOom !== null && !runTop.firstOom.recorded ? runTop.firstOom : null,
      segmentEvents: {
        recorded: f.segmentEventsRecorded,
        replayed: f.segmentEventsReplayed,
        matched: f.segmentEventsMatched,
      },
      differences,
    });
  }
  return {
    reproduced: devices.every((d) => d.reproduced),
    settings,
    settingsSource: source,
    plan: final.plan,
    capped,
    devices,
    replays,
    final: {
      replay: final.index,
      run: final.run,
      plan: final.plan,
      limits: final.limits,
      oneMode: pytorch === plain,
      watched: final.watched,
    },
  };
}

/**
 * The plan for a replay under `limits` (per device; undefined: no cap): the
 * runs of segment frees that were retries or garbage collection under that
 * cap are not empty_cache() calls (Note [The recorded cap]).
 */
export function planUnder(
  snapshot: MemorySnapshot,
  plan: TracePlan,
  caps: readonly DeviceCap[],
  limits: readonly (number | undefined)[],
  inferEmptyCache = plan.emptyCacheInferred,
): TracePlan {
  const none = new Set<number>();
  const retries = (device: number) => {
    const cap = caps.find((c) => c.device === device);
    return cap === undefined ? none : allocatorRunsUnder(cap, limits[device]);
  };
  return withRetries(snapshot, plan, retries, inferEmptyCache);
}

/** A replay as recorded under `limits`; `retries` names the plan it ran (retriesKey). */
type Replayed = {
  readonly plan: TracePlan;
  readonly run: AllocatorRun;
  readonly limits: readonly (number | undefined)[];
  readonly retries: string;
  /** Its number among the replays made (`watch`'s). */
  readonly index: number;
  /** Whether `watch` was told of its steps. */
  readonly watched: boolean;
};

/** Which runs of segment frees the plan under `limits` takes for retries, per device: equal keys, equal plans. */
export function retriesKey(caps: readonly DeviceCap[], limits: readonly (number | undefined)[]): string {
  return caps.map((c) => `${c.device}:${[...allocatorRunsUnder(c, limits[c.device])].join(',')}`).join(' ');
}

/**
 * Note [A run the cap never touched]: the cap enters PyTorch's allocator at
 * one place, the check of reserved bytes plus alloc_size before the driver
 * is asked (Note [Memory limit]), and, with garbage_collection_threshold
 * set, in when collection runs. So without collection a run whose every
 * check asked for at most X bytes (peakCapDemandBytes) makes the same
 * decisions under any cap of at least X, or none: replayed once under one
 * of them, it is the replay under all, given the same plan. (X is not the
 * peak: expandable segments map pages without a check, as PyTorch does.)
 * A run with an oom is replayed anew, since PyTorch's message names the
 * cap. The search for
 * the recorded cap asks about caps near the peak, where this is common
 * (the peak itself, when the run never asked past it), and takes the run
 * it has instead of another replay; a what-if over an inferred interval
 * takes each model's run at its top for its run at the bottom alike
 * (what-if.ts). vmmkit's allocator asks its limit at two checks (point 9
 * of its Note) and keeps the same figure.
 */
export function sameRunUnder(
  run: AllocatorRun,
  ranUnder: readonly (number | undefined)[],
  limits: readonly (number | undefined)[],
  collects: boolean,
): boolean {
  for (const d of run.devices) {
    const was = ranUnder[d.device];
    const now = limits[d.device];
    if (was === now) continue;
    const demand = d.peakCapDemandBytes;
    const allows = (l: number | undefined) => l === undefined || (demand !== null && demand <= l);
    if (collects || d.ooms > 0 || !allows(was) || !allows(now)) return false;
  }
  return run.error === undefined;
}

/** Whether a replay reproduced one device's recording. */
function reproducedBy(r: Replayed, c: DeviceCap): boolean {
  const d = r.run.devices.find((x) => x.device === c.device);
  return d !== undefined && differencesOf(r.plan, c.device, d, c.peakBytes, '').length === 0;
}

/**
 * Note [Searching the cap]: the caps under which the model reproduces the
 * recording are taken to be one interval per device (a larger cap only
 * lets more requests through). cap.ts gives its likely ends: the peak, and
 * the last cap under which the recorded oom still fails. Both are checked
 * with the model, because the trace alone cannot always place them: an
 * expandable segment checks alloc_size against the cap but maps only the
 * pages it lacks, so the smallest cap may lie above or below the peak; and
 * a run of segment frees that max_split_size's partial release made (N6 g)
 * is a retry, not empty_cache(), so caps above its retryBelowBytes do not
 * reproduce. Where an end does not reproduce, halving between a cap that
 * does and one that does not finds it to the page, all devices at once.
 * Under garbage collection (N10) the cap also decides where collection
 * runs, so both ends may fail; the replay's first difference then says
 * which way to halve (steerToCap) until a cap reproduces.
 * The floor is the peak less the largest single growth: below it the
 * growth that made the peak would have failed.
 */
function searchCaps(
  caps: readonly DeviceCap[],
  top: Replayed,
  at: (limits: readonly (number | undefined)[]) => Replayed,
  collects: boolean,
): Map<number, { low: number; high: number }> {
  const bounded = caps.filter((c) => Number.isFinite(c.highBytes));
  const ok = reproducedBy;
  /** One replay with each listed device at its cap (the others at their top). */
  const replayAt = (limitOf: Map<number, number>): Replayed => {
    const limits: (number | undefined)[] = [];
    for (const c of caps) limits[c.device] = Number.isFinite(c.highBytes) ? c.highBytes : undefined;
    for (const [device, l] of limitOf) limits[device] = l;
    return at(limits);
  };
  /** Which of the listed devices reproduced under their caps. */
  const probe = (limitOf: Map<number, number>): Map<number, boolean> => {
    const r = replayAt(limitOf);
    return new Map(bounded.filter((c) => limitOf.has(c.device)).map((c) => [c.device, ok(r, c)]));
  };
  /** Halve each bracket until its good and bad caps are a page apart; the good ones. */
  const halve = (brackets: Map<number, { good: number; bad: number }>): Map<number, number> => {
    for (;;) {
      const mids = new Map<number, number>();
      for (const [device, b] of brackets) {
        const pages = Math.floor(Math.abs(b.good - b.bad) / PAGE);
        if (pages > 1) mids.set(device, Math.min(b.good, b.bad) + Math.floor(pages / 2) * PAGE);
      }
      if (mids.size === 0) break;
      for (const [device, good] of probe(mids)) {
        const b = brackets.get(device) as { good: number; bad: number };
        if (good) b.good = mids.get(device) as number;
        else b.bad = mids.get(device) as number;
      }
    }
    return new Map([...brackets].map(([device, b]) => [device, b.good]));
  };

  const out = new Map<number, { low: number; high: number }>();
  for (const c of bounded) out.set(c.device, { low: c.lowBytes, high: c.highBytes });
  // The top: where it fails, the largest cap that reproduces lies between the peak and it.
  const topFails = bounded.filter((c) => !ok(top, c));
  if (topFails.length > 0) {
    const atLow = probe(new Map(topFails.map((c) => [c.device, c.lowBytes])));
    const brackets = new Map(
      topFails
        .filter((c) => atLow.get(c.device))
        .map((c) => [c.device, { good: c.lowBytes, bad: c.highBytes }]),
    );
    // Under collection both ends may fail; the first difference then says which way the cap lies.
    const steer = collects ? topFails.filter((c) => !atLow.get(c.device)) : [];
    for (const [device, good] of steerToCap(steer, replayAt))
      brackets.set(device, { good, bad: caps.find((c) => c.device === device)?.highBytes as number });
    for (const [device, high] of halve(brackets)) (out.get(device) as { high: number }).high = high;
  }
  // The bottom, from a cap known to reproduce.
  const good = bounded.filter((c) => ok(top, c) || (out.get(c.device)?.high ?? 0) < c.highBytes);
  if (good.length > 0) {
    const below = probe(new Map(good.map((c) => [c.device, c.lowBytes - PAGE])));
    const atLow = probe(new Map(good.map((c) => [c.device, c.lowBytes])));
    const brackets = new Map<number, { good: number; bad: number }>();
    for (const c of good) {
      const range = out.get(c.device) as { low: number; high: number };
      if (below.get(c.device)) brackets.set(c.device, { good: c.lowBytes - PAGE, bad: floorOf(c, top.plan) });
      else if (!atLow.get(c.device)) brackets.set(c.device, { good: range.high, bad: c.lowBytes });
      else range.low = c.lowBytes;
    }
    for (const [device, low] of halve(brackets)) (out.get(device) as { low: number }).low = low;
  }
  return out;
}

/**
 * Under garbage collection a cap too low collects where the recording did
 * not (the replay frees a segment where the recording made one), and a cap
 * too high leaves a segment the recording's collection freed: halving on
 * that signal between the two failing ends finds a cap that reproduces,
 * where there is one (Note [Searching the cap]). Returns those found.
 */
function steerToCap(
  devices: readonly DeviceCap[],
  replayAt: (limitOf: Map<number, number>) => Replayed,
): Map<number, number> {
  const found = new Map<number, number>();
  const brackets = new Map(devices.map((c) => [c.device, { low: c.lowBytes, high: c.highBytes }]));
  while (brackets.size > 0) {
    const mids = new Map<number, number>();
    for (const [device, b] of brackets) {
      const pages = Math.floor((b.high - b.low) / PAGE);
      if (pages > 1) mids.set(device, b.low + Math.floor(pages / 2) * PAGE);
      else brackets.delete(device);
    }
    if (mids.size === 0) break;
    const r = replayAt(mids);
    for (const [device, mid] of mids) {
      const c = devices.find((x) => x.device === device) as DeviceCap;
      const b = brackets.get(device) as { low: number; high: number };
      if (reproducedBy(r, c)) {
        found.set(device, mid);
        brackets.delete(device);
        continue;
      }
      const way = collectedMore(r, device);
      if (way === undefined) brackets.delete(device);
      else if (way) b.low = mid;
      else b.high = mid;
    }
  }
  return found;
}

/** Whether the replay's first difference frees a segment where the recording made one (undefined: neither way). */
function collectedMore(r: Replayed, device: number): boolean | undefined {
  const run = r.run.devices.find((d) => d.device === device);
  if (run === undefined) return undefined;
  const first = compareWithTrace(r.plan.devices[device], run).firstDifference;
  if (first === undefined || first.kind !== 'segment') return undefined;
  const frees = (a: string | undefined) => a === 'segment_free' || a === 'segment_unmap';
  const grows = (a: string | undefined) => a === 'segment_alloc' || a === 'segment_map';
  if (frees(first.replayed?.action) && grows(first.recorded?.action)) return true;
  if (grows(first.replayed?.action) && frees(first.recorded?.action)) return false;
  return undefined;
}

/** The least cap worth trying: the peak less the largest growth (Note [Searching the cap]). */
function floorOf(c: DeviceCap, plan: TracePlan): number {
  return Math.max(0, c.peakBytes - largestGrowth(plan.devices[c.device]) - PAGE);
}

/** The largest single segment_alloc or segment_map of a device's trace. */
function largestGrowth(d: DevicePlan): number {
  const { action, size } = d.trace;
  let most = 0;
  for (let i = 0; i < d.trace.length; i++)
    if ((action[i] === Action.segment_alloc || action[i] === Action.segment_map) && size[i] > most)
      most = size[i];
  return most;
}

/** The settings the recording ran with (Note [As recorded]). */
export function recordedSettings(
  snapshot: MemorySnapshot,
  plan: TracePlan,
): { settings: PytorchAllocatorSettings; source: RecordedSettingsSource } {
  if (snapshot.allocatorSettings !== undefined && snapshot.allocatorSettings !== null)
    return { settings: settingsOfSnapshot(snapshot), source: 'allocator_settings' };
  const mapped = plan.devices.some(
    (d) => d.counts.segmentMap > 0 || d.startState.segments.some((s) => s.expandable),
  );
  const defaults = settingsOfSnapshot(snapshot); // PyTorch's, or torch_npu's on an NPU snapshot
  return mapped
    ? { settings: { ...defaults, expandableSegments: true }, source: 'segment_map events' }
    : { settings: defaults, source: 'defaults' };
}

/**
 * Without recorded settings, each device's own segment events say its mode:
 * where one device maps pages (segment_map) and another allocates whole
 * segments (segment_alloc), as on fixture memsnapdump-multi-devices (a
 * torch_npu recording; expandable_segments can be switched at run time with
 * _set_allocator_settings), each is replayed in its own. Otherwise `pytorch`.
 */
function perDeviceMode(
  pytorch: AllocatorFactory,
  source: RecordedSettingsSource,
  plan: TracePlan,
): AllocatorFactory {
  if (source === 'allocator_settings') return pytorch;
  const maps = new Set<number>();
  const allocs = new Set<number>();
  for (const d of plan.devices) {
    if (d.counts.segmentMap > 0 || d.startState.segments.some((s) => s.expandable)) maps.add(d.device);
    if (d.counts.segmentAlloc > 0 || d.startState.segments.some((s) => !s.expandable)) allocs.add(d.device);
  }
  const mixed = [...maps].some((d) => !allocs.has(d)) && [...allocs].some((d) => !maps.has(d));
  if (!mixed) return pytorch;
  return {
    ...pytorch,
    create: (context, settings) =>
      pytorch.create(context, { ...settings, expandableSegments: maps.has(context.device) }),
  };
}

/** How one replay of one device differs from the recording, in words (empty: reproduced). */
function differencesOf(
  plan: TracePlan,
  device: number,
  run: DeviceRun,
  recordedPeakBytes: number,
  qualifier: string,
  fidelity: FidelityReport = compareWithTrace(plan.devices[device], run),
): string[] {
  const out: string[] = [];
  if (run.peakReservedBytes !== recordedPeakBytes)
    out.push(
      `peak reserved ${formatBytes(run.peakReservedBytes)} where the recording reserved ${formatBytes(recordedPeakBytes)}${qualifier}`,
    );
  for (const o of run.recordedOoms)
    if (o.served)
      out.push(`the recorded OOM at event ${o.event} (${formatBytes(o.bytes)}) succeeded${qualifier}`);
  if (run.firstOom !== null && !run.firstOom.recorded)
    out.push(
      `a request of ${formatBytes(run.firstOom.bytes)} at event ${run.firstOom.event} ran out of memory, where the recording served it${qualifier}`,
    );
  const first = fidelity.firstDifference;
  if (first?.kind === 'segment') out.push(`${first.message}${qualifier}`);
  return out;
}
