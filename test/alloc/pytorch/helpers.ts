import type { AllocatorContext, SegmentEvent } from '../../../src/alloc/allocator.js';
import {
  DEFAULT_PYTORCH_SETTINGS,
  type PytorchAllocatorSettings,
  PytorchExpandableAllocator,
  PytorchNativeAllocator,
} from '../../../src/alloc/pytorch/index.js';
import { createMachine, type Machine } from '../../../src/backends/sim/machine.js';
import type { DeviceSpec } from '../../../src/backends/sim/presets.js';
import { Runtime } from '../../../src/core/runtime.js';
import { FaultyBackend } from '../../support/faulty-backend.js';

export const KiB = 1024;
export const MiB = 1024 * KiB;

/** A small device: OOM paths are cheap to reach. */
export function smallDevice(totalMemory = 64 * MiB): DeviceSpec {
  return { name: 'small', totalMemory, minimumGranularity: 2 * MiB, recommendedGranularity: 2 * MiB };
}

export type Kind = 'native' | 'expandable';

export interface Harness {
  readonly machine: Machine;
  readonly rt: Runtime;
  readonly events: SegmentEvent[];
  readonly alloc: PytorchNativeAllocator | PytorchExpandableAllocator;
  readonly faults: FaultyBackend;
}

/** An allocator of `kind` on a fresh machine, behind a fault-injecting backend (unarmed). */
export function harness(
  kind: Kind,
  settings: Partial<PytorchAllocatorSettings> = {},
  device: DeviceSpec | 'H200' = smallDevice(),
  /** More of the allocator's context (a memory limit, say). */
  extra: Pick<AllocatorContext, 'memoryLimit'> = {},
): Harness {
  const machine = createMachine({ devices: [device] });
  const faults = new FaultyBackend(machine.spawn());
  const rt = new Runtime(faults.backend, { report: () => {} });
  const events: SegmentEvent[] = [];
  const context: AllocatorContext = {
    ...extra,
    runtime: rt,
    device: 0,
    onSegmentEvent: (e) => events.push(e),
  };
  const s = { ...DEFAULT_PYTORCH_SETTINGS, ...settings };
  const alloc =
    kind === 'native' ? new PytorchNativeAllocator(context, s) : new PytorchExpandableAllocator(context, s);
  return { machine, rt, events, alloc, faults };
}
