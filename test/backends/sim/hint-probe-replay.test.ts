/**
 * The hint probe's experiments (conformance/results/h200-hint-probe.json,
 * recorded on the H200 by conformance/cuda/hint-probe.sh), replayed on the
 * simulator's DriverVaSpace: every reservation must land where the H200's
 * did, relative to the start-up heap's hole for the heap and to the first
 * chunk for chunks (Note [Driver VA placement]).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DriverVaSpace, STARTUP_DRIVER_MEMORY, STARTUP_HOLE } from '../../../src/backends/sim/driver-va.js';

const MiB = 1024 * 1024;
const LOW = 0x6000_0000_0000;
const HEAP = 0x7000_0000_0000;
const END = 0x7fff_0000_0000;
/** Where the simulator's hole is, and the run's distance above it. */
const SIM_HOLE = HEAP - STARTUP_DRIVER_MEMORY - STARTUP_HOLE;
const HOLE_TO_RUN = STARTUP_HOLE + STARTUP_DRIVER_MEMORY;
/** The H200's first chunk, the lowest free 32 MiB boundary above its low driver mappings [startupMaps]. */
const H200_FIRST_CHUNK = 0x3_0200_0000;
/** The H200's start-up heap lies this high; its chunks below. */
const H200_HEAP_REGION = 0x7e00_0000_0000;

interface ProbeEvent {
  op: string;
  size?: number;
  align?: number;
  hint?: string;
  got?: string;
  va?: string;
  rc?: number;
  rc2MiB?: number;
  got2MiB?: string;
}
interface Probe {
  experiments: Record<string, { exit: number; events?: ProbeEvent[] }>;
}

const probe = JSON.parse(
  readFileSync(new URL('../../../conformance/results/h200-hint-probe.json', import.meta.url), 'utf8'),
) as Probe;

/**
 * Experiments the simulator cannot replay, each with why (the Note's "Left
 * out"): both meet the H200's host mappings near its start-up heap.
 */
const NOT_REPLAYED: Record<string, string> = {
  startupMaps: 'reads /proc/self/maps only',
  never: "hints into and past the host's own mappings around the start-up heap",
  alignmentAndSize:
    'a 32 MiB request hinted at the run goes to a chunk past the host mappings above the run (at 120 MiB)',
  largeAlignment:
    "2 MiB aligned to 32 MiB gets a chunk on the H200, whose run is only 8 MiB-aligned; the simulator's run starts at a 4 GiB boundary and takes it",
};

/** The H200's hole in one experiment: its lowest start-up heap address, or 74 MiB below the run's. */
function h200Hole(events: readonly ProbeEvent[]): number {
  const inHeap = events
    .flatMap((e) => [e.got, e.got2MiB])
    .filter((a): a is string => a !== undefined)
    .map(Number)
    .filter((a) => a >= H200_HEAP_REGION);
  const lowest = Math.min(...inHeap);
  // The hole sits 6 MiB past an 8 MiB boundary; the run starts on one.
  return lowest % (8 * MiB) === 6 * MiB ? lowest : lowest - HOLE_TO_RUN;
}

/** An H200 address as the simulator's: by its offset from the hole, or from the first chunk. */
function toSim(address: number, hole: number): number {
  return address >= H200_HEAP_REGION ? SIM_HOLE + (address - hole) : LOW + (address - H200_FIRST_CHUNK);
}

/** The reserve/free events of one experiment, replayed; the first placement that differs, or null. */
function replay(space: DriverVaSpace, events: readonly ProbeEvent[]): string | null {
  const hole = h200Hole(events);
  for (const [i, e] of events.entries()) {
    if (e.op === 'reserve' && e.rc === 0) {
      const hint = e.hint === undefined ? 0 : toSim(Number(e.hint), hole);
      const got = space.allocate(e.size! * MiB, (e.align ?? 2) * MiB, hint);
      const want = toSim(Number(e.got), hole);
      if (got !== want)
        return `event ${i} (${JSON.stringify(e)}): 0x${got.toString(16)}, not 0x${want.toString(16)}`;
    } else if (e.op === 'free' && e.rc === 0) {
      space.release(toSim(Number(e.va), hole), e.size! * MiB);
    } else if (e.op === 'cuMemAlloc' && e.rc2MiB === 0) {
      // Its 2 MiB cuMemAlloc takes start-up heap space as a reservation does; the 64 MiB one, which the
      // H200 puts below the heap's mapping, stays out of the replay.
      const got = space.allocate(2 * MiB, 2 * MiB, 0);
      if (got !== toSim(Number(e.got2MiB), hole)) return `event ${i}: cuMemAlloc at 0x${got.toString(16)}`;
    }
  }
  return null;
}

const replayed = Object.keys(probe.experiments).filter((n) => !(n in NOT_REPLAYED));

describe('the hint probe on the simulator (Note [Driver VA placement])', () => {
  it('replays every experiment but the few it cannot, each recorded cleanly', () => {
    for (const n of Object.keys(NOT_REPLAYED)) expect(probe.experiments[n]).toBeDefined();
    expect(replayed.length).toBeGreaterThan(15);
    for (const n of replayed) expect(probe.experiments[n]!.exit, n).toBe(0);
  });

  // Sabotage: the simulator's old start-up heap, with its hole taken, and one whose driver memory takes
  // hints. Each must be caught.
  it('catches a start-up heap without its hole', () => {
    const space = new DriverVaSpace(LOW, END, HEAP);
    expect(space.allocate(STARTUP_HOLE, STARTUP_HOLE, SIM_HOLE)).toBe(SIM_HOLE);
    expect(replay(space, probe.experiments.startupHeapFull!.events!)).toMatch(/^event 0 /);
  });
  it('catches driver memory that honours hints', () => {
    class HintsIntoDriverMemory extends DriverVaSpace {
      override allocate(size: number, alignment: number, hint: number): number {
        const inDriverMemory = hint >= SIM_HOLE + STARTUP_HOLE && hint < HEAP;
        return inDriverMemory ? hint : super.allocate(size, alignment, hint);
      }
    }
    expect(
      replay(new HintsIntoDriverMemory(LOW, END, HEAP), probe.experiments.several!.events!),
    ).not.toBeNull();
  });

  for (const name of replayed) {
    it(name, () => {
      expect(replay(new DriverVaSpace(LOW, END, HEAP), probe.experiments[name]!.events!)).toBeNull();
    });
  }
});
