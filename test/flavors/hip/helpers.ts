/**
 * Where the HIP conformance tables run: VMMKIT_TEST_BACKEND chooses.
 *
 * - `sim` (default): the simulated machine, one AMD MI300X (4 KiB minimum
 *   granularity) unless a row asks for more devices.
 * - `cuda`: the real NVIDIA driver through libcuda (HIP over CUDA, as HIP
 *   itself runs on NVIDIA parts); the machine's devices apply (an H200: 2 MiB
 *   minimum and recommended granularity). Without a driver every row fails
 *   with CudaDriverUnavailableError, naming the libraries tried.
 * - `fake-cuda`: the `cuda` code path over conformance/gpu/fake-driver.ts (a
 *   stand-in for libcuda played by a simulated H200), to rehearse a GPU run
 *   where there is none. It is a harness, not the driver.
 *
 * Rows that depend on a simulator-only fact are skipped on `cuda` with
 * `it.skipIf(ON_CUDA)` and a reason; the rest are parametrised by the
 * device's granularity (G below), so one row states the same rule on both.
 */
import { createFakeDriver } from '../../../conformance/gpu/fake-driver.js';
import type { FlavorOptions } from '../../../src/entry/processes.js';
import { createHip } from '../../../src/entry/processes.js';
import type { HipFlavor } from '../../../src/flavors/hip/hip.js';

export type TestBackend = 'sim' | 'cuda' | 'fake-cuda';

export function testBackend(): TestBackend {
  const b = process.env.VMMKIT_TEST_BACKEND ?? 'sim';
  if (b === 'sim' || b === 'cuda' || b === 'fake-cuda') return b;
  throw new Error(`VMMKIT_TEST_BACKEND=${b}: expected sim, cuda or fake-cuda`);
}

export const BACKEND = testBackend();
/** The rows run on the CUDA backend (the real driver, or its fake stand-in). */
export const ON_CUDA = BACKEND !== 'sim';

/**
 * A HIP process on the chosen backend. On the simulator `options` are used as
 * given (default: one MI300X); on `cuda` the machine's devices apply and
 * `devices` / `machine` are ignored (rows that need them are skipped there).
 */
export function makeHip(options: FlavorOptions = {}): HipFlavor {
  if (BACKEND === 'sim') return createHip(options);
  const { tracer, report } = options;
  if (BACKEND === 'cuda') return createHip({ backend: 'cuda', tracer, report });
  return createHip({
    backend: 'cuda',
    cuda: { driver: createFakeDriver({ devices: ['H200'] }) },
    tracer,
    report,
  });
}

/** The facts of device 0 that the rows are parametrised by, read once through the flavor. */
function probe(): { devices: number; minimum: number; recommended: number; total: number } {
  const hip = makeHip();
  try {
    const d = hip.runtime.devices[0]!;
    return {
      devices: hip.runtime.devices.length,
      minimum: d.minimumGranularity,
      recommended: d.recommendedGranularity,
      total: d.totalMemory,
    };
  } finally {
    hip.dispose();
  }
}
const facts = probe();

/** Devices of the default process: 1 on the simulator (one MI300X), the machine's on `cuda`. */
export const DEVICES = facts.devices;
/** Minimum granularity: 4 KiB on an MI300X, 2 MiB on an H200. */
export const G = facts.minimum;
/** Recommended granularity: 2 MiB on both. */
export const RECOMMENDED = facts.recommended;
/** Device 0's memory. */
export const TOTAL = facts.total;
/** Rows with two devices: on the simulator they make two; on `cuda` they need the machine to have two. */
export const TWO_DEVICES = !ON_CUDA || DEVICES >= 2;

export const SKIP = {
  mi300x: 'simulator-only: MI300X facts (name, 4 KiB granularity, 192 GiB, 2048-byte create alignment)',
  twoDevices: 'needs two devices; this machine has one',
  processes: 'simulator-only: two processes on one machine, fd passed with machine.passFd',
  internals: 'simulator-only: machine.liveAllocations (the driver does not show when memory is freed)',
  fabric:
    'the H200 driver refuses fabric handles at create (800, NOT_PERMITTED, h200-driver.md); the simulated MI300X creates them',
  accounting: "simulator-only: hipMemGetInfo's exact accounting of a hipMalloc on an MI300X",
} as const;
