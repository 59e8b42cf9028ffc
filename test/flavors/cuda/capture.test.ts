/**
 * Stream capture through the CUDA flavour (Note [Stream capture] in
 * src/core/graphs.ts, Note [CUDA capture rules] in flavors/cuda/capture.ts):
 * random capture-and-launch sequences against a shadow model of the bytes,
 * the model's power to catch a broken capture (sabotage), the join and
 * invalidation rules, and every capture.* conformance case over the CUDA
 * backend (on the fake driver) agreeing with the simulator.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { caseNames } from '../../../conformance/cuda/cases.js';
import { prepareEnv, runCase, runSimulatedCase } from '../../../conformance/cuda/record.js';
import { createFakeDriver } from '../../../conformance/gpu/fake-driver.js';
import { createCuda } from '../../../src/entry/processes.js';
import * as C from '../../../src/flavors/cuda/constants.js';
import type { CudaFlavor } from '../../../src/flavors/cuda/cuda.js';
import { cudaWithContext, DEVICE_PROP, RW0 } from './helpers.js';

const G = 2 * 1024 * 1024;
/** The bytes the sequences work on, at the start of one 2 MiB mapping. */
const SPAN = 512;
const HOST_BUFFERS = 3;

/** A process with one read-write mapping and two created streams. */
function setUp(cu: CudaFlavor): { base: bigint; streams: [bigint, bigint] } {
  const ptr = { value: 0n };
  const h = { value: 0n };
  const s1 = { value: 0n };
  const s2 = { value: 0n };
  const steps = [
    cu.cuMemAddressReserve(ptr, G, 0, 0, 0),
    cu.cuMemCreate(h, G, DEVICE_PROP, 0),
    cu.cuMemMap(ptr.value, G, 0, h.value, 0),
    cu.cuMemSetAccess(ptr.value, G, RW0, 1),
    cu.cuMemsetD8(ptr.value, 0, SPAN),
    cu.cuStreamCreate(s1, 0),
    cu.cuStreamCreate(s2, C.CU_STREAM_NON_BLOCKING),
  ];
  expect(steps).toEqual(steps.map(() => C.CUDA_SUCCESS));
  return { base: ptr.value, streams: [s1.value, s2.value] };
}

type Command =
  | { kind: 'memset'; stream: 0 | 1; offset: number; size: number; value: number }
  | { kind: 'htod'; stream: 0 | 1; offset: number; size: number; buffer: number }
  | { kind: 'dtod'; stream: 0 | 1; dst: number; src: number; size: number }
  | { kind: 'dtoh'; stream: 0 | 1; offset: number; size: number; buffer: number }
  | { kind: 'host'; buffer: number; value: number }
  | { kind: 'begin'; mode: number }
  | { kind: 'end' }
  | { kind: 'launch'; exec: number; stream: 0 | 1 };

const range = (size: number) =>
  fc
    .tuple(fc.integer({ min: 0, max: SPAN - 1 }), fc.integer({ min: 1, max: size }))
    .map(([offset, n]) => ({ offset, size: Math.min(n, SPAN - offset) }));
const stream = fc.constantFrom<0 | 1>(0, 1);
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .tuple(stream, range(128), fc.integer({ min: 0, max: 255 }))
      .map(([s, r, value]) => ({ kind: 'memset' as const, stream: s, ...r, value })),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(stream, range(64), fc.integer({ min: 0, max: HOST_BUFFERS - 1 }))
      .map(([s, r, buffer]) => ({ kind: 'htod' as const, stream: s, ...r, buffer })),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(stream, range(64), fc.integer({ min: 0, max: HOST_BUFFERS - 1 }))
      .map(([s, r, buffer]) => ({ kind: 'dtoh' as const, stream: s, ...r, buffer })),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(stream, fc.integer({ min: 0, max: SPAN - 64 }), fc.integer({ min: 0, max: SPAN - 64 }))
      .map(([s, dst, src]) => ({ kind: 'dtod' as const, stream: s, dst, src, size: 64 })),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.integer({ min: 0, max: HOST_BUFFERS - 1 }), fc.integer({ min: 0, max: 255 }))
      .map(([buffer, value]) => ({ kind: 'host' as const, buffer, value })),
  },
  { weight: 2, arbitrary: fc.constantFrom(0, 1, 2).map((mode) => ({ kind: 'begin' as const, mode })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'end' as const }) },
  {
    weight: 4,
    arbitrary: fc.tuple(fc.nat(8), stream).map(([exec, s]) => ({ kind: 'launch' as const, exec, stream: s })),
  },
);

/**
 * The shadow model: device bytes, its own copy of the host buffers (a
 * captured host side is read or written at launch time), the capture of
 * stream 0 as a list of steps, and the executable graphs. Every stream is
 * synchronised after each step, so order is program order.
 */
class Model {
  readonly device = new Uint8Array(SPAN);
  readonly host = Array.from({ length: HOST_BUFFERS }, () => new Uint8Array(64));
  capture: (() => void)[] | undefined;
  readonly execs: (() => void)[][] = [];

  /** Run `step` now, or keep it when `stream` 0 is capturing. */
  work(s: 0 | 1, step: () => void): void {
    if (s === 0 && this.capture) this.capture.push(step);
    else step();
  }
}

/** Run `commands` on `cu` and the model; returns the first disagreement, or undefined. */
function runSequence(cu: CudaFlavor, commands: readonly Command[]): string | undefined {
  const { base, streams } = setUp(cu);
  const m = new Model();
  const host = m.host.map((b) => new Uint8Array(b.length));
  const graphs: bigint[] = [];
  const execs: bigint[] = [];
  const at = (offset: number) => base + BigInt(offset);
  for (const [i, c] of commands.entries()) {
    // During a capture all work goes to the capturing stream: synchronising another stream then is an
    // unsafe call (capture.during.otherStreamAsync), and a launch into a capture is refused.
    const s = c.kind === 'host' || c.kind === 'begin' || c.kind === 'end' || m.capture ? 0 : c.stream;
    const h = streams[s];
    let code: number = C.CUDA_SUCCESS;
    let expected: number = C.CUDA_SUCCESS;
    if (c.kind === 'memset') {
      code = cu.cuMemsetD8Async(at(c.offset), c.value, c.size, h);
      m.work(s, () => m.device.fill(c.value, c.offset, c.offset + c.size));
    } else if (c.kind === 'htod') {
      const src = m.host[c.buffer]!;
      code = cu.cuMemcpyHtoDAsync(at(c.offset), host[c.buffer]!, c.size, h);
      m.work(s, () => m.device.set(src.subarray(0, c.size), c.offset));
    } else if (c.kind === 'dtoh') {
      const dst = m.host[c.buffer]!;
      code = cu.cuMemcpyDtoHAsync(host[c.buffer]!, at(c.offset), c.size, h);
      m.work(s, () => dst.set(m.device.subarray(c.offset, c.offset + c.size)));
    } else if (c.kind === 'dtod') {
      code = cu.cuMemcpyDtoDAsync(at(c.dst), at(c.src), c.size, h);
      m.work(s, () => m.device.copyWithin(c.dst, c.src, c.src + c.size));
    } else if (c.kind === 'host') {
      m.host[c.buffer]!.fill(c.value);
      host[c.buffer]!.fill(c.value);
    } else if (c.kind === 'begin') {
      code = cu.cuStreamBeginCapture(h, c.mode);
      if (m.capture) expected = C.CUDA_ERROR_ILLEGAL_STATE;
      else m.capture = [];
    } else if (c.kind === 'end') {
      const g = { value: 0n };
      code = cu.cuStreamEndCapture(h, g);
      if (!m.capture) expected = C.CUDA_ERROR_ILLEGAL_STATE;
      else {
        graphs.push(g.value);
        const x = { value: 0n };
        const ic = cu.cuGraphInstantiate(x, g.value, 0);
        if (ic !== C.CUDA_SUCCESS) return `step ${i}: instantiate answered ${ic}`;
        execs.push(x.value);
        m.execs.push(m.capture);
        m.capture = undefined;
      }
    } else if (execs.length > 0 && !m.capture) {
      const k = c.exec % execs.length;
      code = cu.cuGraphLaunch(execs[k]!, h);
      const steps = m.execs[k]!;
      m.work(s, () => {
        for (const step of steps) step();
      });
    }
    if (code !== expected) return `step ${i} (${c.kind}): ${code}, the model says ${expected}`;
    // Outside a capture every step has run once its streams are synchronised.
    const status = { value: -1 };
    cu.cuStreamIsCapturing(h, status);
    const capturing = m.capture ? C.CU_STREAM_CAPTURE_STATUS_ACTIVE : C.CU_STREAM_CAPTURE_STATUS_NONE;
    if (s === 0 && status.value !== capturing) return `step ${i}: capture status ${status.value}`;
    if (!m.capture && cu.cuStreamSynchronize(streams[0]) !== C.CUDA_SUCCESS) return `step ${i}: sync`;
    if (!m.capture && cu.cuStreamSynchronize(streams[1]) !== C.CUDA_SUCCESS) return `step ${i}: sync`;
  }
  if (m.capture) {
    const g = { value: 0n };
    if (cu.cuStreamEndCapture(streams[0], g) !== C.CUDA_SUCCESS) return 'the last end failed';
    graphs.push(g.value);
  }
  const bytes = new Uint8Array(SPAN);
  if (cu.cuMemcpyDtoH(bytes, base, SPAN) !== C.CUDA_SUCCESS) return 'the read back failed';
  if (Buffer.compare(bytes, m.device) !== 0) return 'device bytes differ from the model';
  if (host.some((b, i) => Buffer.compare(b, m.host[i]!) !== 0)) return 'host bytes differ from the model';
  for (const x of execs) if (cu.cuGraphExecDestroy(x) !== C.CUDA_SUCCESS) return 'exec destroy failed';
  for (const g of graphs) if (cu.cuGraphDestroy(g) !== C.CUDA_SUCCESS) return 'graph destroy failed';
  return undefined;
}

/** Whether some sequence makes `make`'s processes disagree with the model. */
function disagrees(make: () => CudaFlavor, runs: number): string | undefined {
  const result = fc.check(
    fc.property(fc.array(command, { minLength: 20, maxLength: 60 }), (commands) => {
      const cu = make();
      try {
        return runSequence(cu, commands) === undefined;
      } finally {
        cu.dispose();
      }
    }),
    { numRuns: runs, seed: 17 },
  );
  return result.failed ? JSON.stringify(result.counterexample) : undefined;
}

describe('stream capture against a shadow model', () => {
  it('random capture, launch and plain stream work leave the bytes the model says', () => {
    expect(disagrees(() => cudaWithContext(), 150)).toBeUndefined();
  });

  /** A flavour whose runtime is changed by `sabotage`: the model must notice. */
  const sabotaged = (sabotage: (cu: CudaFlavor) => void) => () => {
    const cu = cudaWithContext();
    sabotage(cu);
    return cu;
  };
  const runtimeOf = (cu: CudaFlavor) => cu.runtime as unknown as Record<string, (...a: unknown[]) => unknown>;

  it('catches a capture that runs its work at once', () => {
    const broken = sabotaged((cu) => {
      const rt = runtimeOf(cu);
      const fill = rt.fill!.bind(cu.runtime);
      // A captured set is issued (on the default stream) as well as kept.
      rt.fill = (d, va, v, n, s) => {
        if (s !== 0 && cu.runtime.captures.status(s as number) !== 'none') fill(d, va, v, n, 0);
        return fill(d, va, v, n, s);
      };
    });
    expect(disagrees(broken, 150)).toBeDefined();
  });

  it('catches a capture that keeps the host bytes of capture time', () => {
    const broken = sabotaged((cu) => {
      const rt = runtimeOf(cu);
      const write = rt.write!.bind(cu.runtime);
      rt.write = (d, va, src, s) => write(d, va, (src as Uint8Array).slice(), s);
    });
    expect(disagrees(broken, 150)).toBeDefined();
  });

  it('catches an executable graph that runs only its first launch', () => {
    const broken = sabotaged((cu) => {
      const rt = runtimeOf(cu);
      const launch = rt.launchGraph!.bind(cu.runtime);
      const launched = new Set<unknown>();
      rt.launchGraph = (exec, s) => {
        if (launched.has(exec)) return;
        launched.add(exec);
        return launch(exec, s);
      };
    });
    expect(disagrees(broken, 150)).toBeDefined();
  });
});

describe('joins and invalidation', () => {
  const mapped = (cu: CudaFlavor) => setUp(cu);
  const event = (cu: CudaFlavor) => {
    const e = { value: 0n };
    expect(cu.cuEventCreate(e, C.CU_EVENT_DISABLE_TIMING)).toBe(C.CUDA_SUCCESS);
    return e.value;
  };

  it('a fork joined back through a third stream ends; one not joined back is UNJOINED; an end off the origin UNMATCHED, and invalidates', () => {
    const cu = cudaWithContext();
    const { base, streams } = mapped(cu);
    const third = { value: 0n };
    expect(cu.cuStreamCreate(third, 0)).toBe(C.CUDA_SUCCESS);
    const [s1, s2] = streams;
    const s3 = third.value;
    const [e1, e2, e3] = [event(cu), event(cu), event(cu)];
    for (const ending of ['joined', 'unjoined', 'offOrigin'] as const) {
      const joinBack = ending === 'joined';
      expect(cu.cuStreamBeginCapture(s1, C.CU_STREAM_CAPTURE_MODE_GLOBAL)).toBe(C.CUDA_SUCCESS);
      expect(cu.cuEventRecord(e1, s1)).toBe(C.CUDA_SUCCESS);
      expect(cu.cuStreamWaitEvent(s2, e1, 0)).toBe(C.CUDA_SUCCESS);
      expect(cu.cuMemsetD8Async(base, 9, 64, s2)).toBe(C.CUDA_SUCCESS);
      expect(cu.cuEventRecord(e2, s2)).toBe(C.CUDA_SUCCESS);
      // s3 joins through s2's event, then s1 waits on s3: s2's step is seen through s3.
      expect(cu.cuStreamWaitEvent(s3, e2, 0)).toBe(C.CUDA_SUCCESS);
      expect(cu.cuEventRecord(e3, s3)).toBe(C.CUDA_SUCCESS);
      if (joinBack) expect(cu.cuStreamWaitEvent(s1, e3, 0)).toBe(C.CUDA_SUCCESS);
      const g = { value: 0n };
      if (ending === 'offOrigin')
        expect(cu.cuStreamEndCapture(s2, g)).toBe(C.CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
      expect(cu.cuStreamEndCapture(s1, g)).toBe(
        {
          joined: C.CUDA_SUCCESS,
          unjoined: C.CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
          offOrigin: C.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
        }[ending],
      );
      const status = { value: -1 };
      for (const s of [s1, s2, s3]) {
        expect(cu.cuStreamIsCapturing(s, status)).toBe(C.CUDA_SUCCESS);
        expect(status.value).toBe(C.CU_STREAM_CAPTURE_STATUS_NONE);
      }
      if (joinBack) expect(cu.cuGraphDestroy(g.value)).toBe(C.CUDA_SUCCESS);
    }
    cu.dispose();
  });

  it('waiting on another capture’s event is CUDA_ERROR_STREAM_CAPTURE_MERGE', () => {
    const cu = cudaWithContext();
    const { streams } = mapped(cu);
    const [s1, s2] = streams;
    const e = event(cu);
    expect(cu.cuStreamBeginCapture(s1, C.CU_STREAM_CAPTURE_MODE_GLOBAL)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuStreamBeginCapture(s2, C.CU_STREAM_CAPTURE_MODE_GLOBAL)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuEventRecord(e, s1)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuStreamWaitEvent(s2, e, 0)).toBe(C.CUDA_ERROR_STREAM_CAPTURE_MERGE);
    const g = { value: 0n };
    for (const s of [s1, s2]) {
      expect(cu.cuStreamEndCapture(s, g)).toBe(C.CUDA_SUCCESS);
      expect(cu.cuGraphDestroy(g.value)).toBe(C.CUDA_SUCCESS);
    }
    cu.dispose();
  });

  it('a refused call invalidates the capture for the modes that forbid it, and the end says so', () => {
    for (const [mode, refused] of [
      [C.CU_STREAM_CAPTURE_MODE_GLOBAL, true],
      [C.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, true],
      [C.CU_STREAM_CAPTURE_MODE_RELAXED, false],
    ] as const) {
      const cu = cudaWithContext();
      const { base, streams } = mapped(cu);
      const s = streams[0];
      expect(cu.cuStreamBeginCapture(s, mode)).toBe(C.CUDA_SUCCESS);
      const p = { value: 0n };
      expect(cu.cuMemAlloc(p, 4096)).toBe(refused ? C.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : C.CUDA_SUCCESS);
      const status = { value: -1 };
      cu.cuStreamIsCapturing(s, status);
      expect(status.value).toBe(
        refused ? C.CU_STREAM_CAPTURE_STATUS_INVALIDATED : C.CU_STREAM_CAPTURE_STATUS_ACTIVE,
      );
      expect(cu.cuMemsetD8Async(base, 1, 16, s)).toBe(
        refused ? C.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : C.CUDA_SUCCESS,
      );
      const g = { value: 0n };
      expect(cu.cuStreamEndCapture(s, g)).toBe(
        refused ? C.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : C.CUDA_SUCCESS,
      );
      cu.cuStreamIsCapturing(s, status);
      expect(status.value).toBe(C.CU_STREAM_CAPTURE_STATUS_NONE);
      cu.dispose();
    }
  });

  it('an event recorded in an open capture is CUDA_ERROR_CAPTURED_EVENT to query, and invalidates it', () => {
    const cu = cudaWithContext();
    const { streams } = mapped(cu);
    const e = event(cu);
    const s = streams[0];
    expect(cu.cuStreamBeginCapture(s, C.CU_STREAM_CAPTURE_MODE_RELAXED)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuEventRecord(e, s)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuEventQuery(e)).toBe(C.CUDA_ERROR_CAPTURED_EVENT);
    const status = { value: -1 };
    cu.cuStreamIsCapturing(s, status);
    expect(status.value).toBe(C.CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    expect(cu.cuStreamEndCapture(s, { value: 0n })).toBe(C.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    cu.dispose();
  });

  it('after its capture ends such an event is CUDA_ERROR_INVALID_VALUE, until an external record node records it', () => {
    const cu = cudaWithContext();
    const { streams } = mapped(cu);
    const e = event(cu);
    const s = streams[0];
    expect(cu.cuStreamBeginCapture(s, C.CU_STREAM_CAPTURE_MODE_GLOBAL)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuEventRecord(e, s)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuEventRecordWithFlags(e, s, C.CU_EVENT_RECORD_EXTERNAL)).toBe(C.CUDA_SUCCESS);
    const g = { value: 0n };
    expect(cu.cuStreamEndCapture(s, g)).toBe(C.CUDA_SUCCESS);
    const n = { value: -1 };
    expect(cu.cuGraphGetNodes(g.value, null, n)).toBe(C.CUDA_SUCCESS);
    expect(n.value).toBe(1);
    expect(cu.cuEventQuery(e)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    const x = { value: 0n };
    expect(cu.cuGraphInstantiate(x, g.value, 0)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuGraphLaunch(x.value, s)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuEventSynchronize(e)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuEventQuery(e)).toBe(C.CUDA_SUCCESS);
    cu.dispose();
  });

  it('a launch over memory unmapped since succeeds, and its fault is the sticky answer of later synchronisations', () => {
    const cu = cudaWithContext();
    const { base, streams } = mapped(cu);
    const s = streams[0];
    expect(cu.cuStreamBeginCapture(s, C.CU_STREAM_CAPTURE_MODE_GLOBAL)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuMemsetD8Async(base, 1, 64, s)).toBe(C.CUDA_SUCCESS);
    const g = { value: 0n };
    const x = { value: 0n };
    expect(cu.cuStreamEndCapture(s, g)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuGraphInstantiate(x, g.value, 0)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuStreamSynchronize(s)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuMemUnmap(base, G)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuGraphLaunch(x.value, s)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuStreamSynchronize(s)).toBe(C.CUDA_ERROR_LAUNCH_FAILED);
    expect(cu.cuCtxSynchronize()).toBe(C.CUDA_ERROR_LAUNCH_FAILED);
    cu.dispose();
  });

  it('sets of every width into unmapped memory are captured, to be checked at launch; a copy from the host is refused at capture', () => {
    const cu = cudaWithContext();
    const { streams } = mapped(cu);
    const s = streams[0];
    const r = { value: 0n };
    expect(cu.cuMemAddressReserve(r, 128 * 1024 * 1024, 0, 0, 0)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuStreamBeginCapture(s, C.CU_STREAM_CAPTURE_MODE_GLOBAL)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuMemsetD8Async(r.value, 1, 256, s)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuMemsetD32Async(r.value, 0x01020304, 64, s)).toBe(C.CUDA_SUCCESS);
    // Above 64 MiB a wide set is written in pieces; a capture takes them unchecked too.
    expect(cu.cuMemsetD32Async(r.value, 0x01020304, 17 * 1024 * 1024, s)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuMemcpyHtoDAsync(r.value, new Uint8Array(256), 256, s)).toBe(C.CUDA_ERROR_INVALID_VALUE);
    const status = { value: -1 };
    expect(cu.cuStreamIsCapturing(s, status)).toBe(C.CUDA_SUCCESS);
    expect(status.value).toBe(C.CU_STREAM_CAPTURE_STATUS_ACTIVE);
    const g = { value: 0n };
    expect(cu.cuStreamEndCapture(s, g)).toBe(C.CUDA_SUCCESS);
    const n = { value: -1 };
    expect(cu.cuGraphGetNodes(g.value, null, n)).toBe(C.CUDA_SUCCESS);
    expect(n.value).toBe(2 + 68);
    cu.dispose();
  });

  it('dispose with open captures, graphs and executable graphs reports nothing', () => {
    const reports: string[] = [];
    const cu = cudaWithContext({ report: (message) => reports.push(message) });
    const { streams } = mapped(cu);
    expect(cu.cuStreamBeginCapture(streams[0], C.CU_STREAM_CAPTURE_MODE_GLOBAL)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuStreamBeginCapture(streams[1], C.CU_STREAM_CAPTURE_MODE_RELAXED)).toBe(C.CUDA_SUCCESS);
    const g = { value: 0n };
    expect(cu.cuStreamEndCapture(streams[1], g)).toBe(C.CUDA_SUCCESS);
    expect(cu.cuGraphInstantiate({ value: 0n }, g.value, 0)).toBe(C.CUDA_SUCCESS);
    cu.dispose();
    expect(reports).toEqual([]);
    expect(cu.cuStreamIsCapturing(streams[0], { value: -1 })).toBe(C.CUDA_ERROR_DEINITIALIZED);
  });
});

describe('capture over the CUDA backend', () => {
  const names = caseNames().filter((n) => n.startsWith('capture.'));

  it.each(names)('%s answers on the CUDA backend (fake driver) as on the simulator', (name) => {
    const cu = createCuda({ backend: 'cuda', cuda: { driver: createFakeDriver() }, report: () => {} });
    try {
      const { env } = prepareEnv(cu);
      const record = runCase(cu, env, name);
      // As the recorder and runSimulatedCase do after each case: what the context answers now.
      const after = cu.cuCtxSynchronize();
      if (after !== C.CUDA_SUCCESS) record.contextAfter = after;
      expect(record).toEqual(runSimulatedCase(name).record);
    } finally {
      cu.dispose();
    }
  });
});
