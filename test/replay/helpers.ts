/** Building small traces in code, and reading the committed fixtures. */
import { fileURLToPath } from 'node:url';
import { readSnapshotFile } from '../../src/replay/read/load.js';
import {
  Action,
  type DeviceTrace,
  type MemorySnapshot,
  type TraceAction,
} from '../../src/replay/read/snapshot.js';

export function fixture(name: string): string {
  return fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
}

export function readFixture(name: string): MemorySnapshot {
  return readSnapshotFile(fixture(name));
}

export type Event = readonly [action: TraceAction, addr: number, size: number, stream?: number];

/** A DeviceTrace from [action, addr, size, stream] tuples, event i at time i us. */
export function traceOf(device: number, events: readonly Event[]): DeviceTrace {
  const n = events.length;
  const t: DeviceTrace = {
    device,
    length: n,
    action: new Uint8Array(n),
    addr: new Float64Array(n),
    size: new Float64Array(n),
    stream: new Float64Array(n),
    timeUs: new Float64Array(n),
    stack: new Int32Array(n).fill(-1),
  };
  events.forEach(([a, addr, size, stream], i) => {
    t.action[i] = Action[a];
    t.addr[i] = addr;
    t.size[i] = size;
    t.stream[i] = stream ?? 0;
    t.timeUs[i] = i;
  });
  return t;
}

export function snapshotOf(...traces: (readonly Event[])[]): MemorySnapshot {
  return {
    traces: traces.map((e, d) => traceOf(d, e)),
    segments: [],
    allocatorSettings: undefined,
    frames: [],
    stacks: [],
    traceAllocMaxEntries: undefined,
    traceAllocOverflowed: undefined,
    externalAnnotations: 0,
  };
}
