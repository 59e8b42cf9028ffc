/**
 * Snapshots replayed on their vendor's front end (issue 31, section 3): a
 * torch_npu snapshot on ACL over a simulated Ascend 910B, a CUDA-shaped one
 * as ROCm's on HIP over an MI300X. The trace must show the allocator's life
 * in the vendor's own calls, and the replay must answer as it does on core.
 */
import { describe, expect, it } from 'vitest';
import { Tracer, type TraceSpan } from '../../src/core/trace.js';
import { FRONT_END_OF, startOnFrontEnd } from '../../src/entry/front-end-process.js';

import { readSnapshotFile } from '../../src/replay/read/load.js';
import { detectVendor } from '../../src/replay/read/vendor.js';
import { replay } from '../support/replay.js';

const WILD = 'test/replay/fixtures/wild';

/** Every span's name, depth first, with its layer. */
function calls(roots: readonly TraceSpan[]): string[] {
  const out: string[] = [];
  const walk = (s: TraceSpan) => {
    out.push(`${s.layer}:${s.name}`);
    for (const c of s.children) walk(c);
  };
  for (const r of roots) walk(r);
  return out;
}

/** How many root calls of each name. */
function counts(roots: readonly TraceSpan[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of roots) m.set(r.name, (m.get(r.name) ?? 0) + 1);
  return m;
}

describe('an NPU snapshot on the ACL front end over an Ascend 910B', () => {
  const snapshot = readSnapshotFile(`${WILD}/memsnapdump-multi-devices.pickle.gz`);

  it('is recognised as torch_npu and given ACL over the 910B', () => {
    expect(detectVendor(snapshot).vendor).toBe('npu');
    expect(FRONT_END_OF.npu).toEqual({ frontEnd: 'ACL', device: 'Ascend910B' });
  });

  it("shows torch_npu's expandable segments as seed 2's calls, each paired, and answers as core does", () => {
    const tracer = new Tracer({ layers: 'vendor' });
    const options = { allocConf: 'expandable_segments:True', device: 'Ascend910B' as const };
    const onAcl = replay(snapshot, { ...options, startProcess: startOnFrontEnd({ vendor: 'npu', tracer }) });
    const onCore = replay(snapshot, options);
    const run = onAcl.allocators[0];
    expect(run.error).toBeUndefined();
    expect(run.warnings).toEqual([]);
    // The front end changes the calls, not the answer.
    expect(run.peakReservedBytes).toBe(onCore.allocators[0].peakReservedBytes);
    expect(run.devices.map((d) => d.peakReservedBytes)).toEqual(
      onCore.allocators[0].devices.map((d) => d.peakReservedBytes),
    );
    const n = counts(tracer.roots);
    for (const call of [
      'aclrtReserveMemAddress',
      'aclrtMallocPhysical',
      'aclrtMapMem',
      'aclrtUnmapMem',
      'aclrtFreePhysical',
      'aclrtReleaseMemAddress',
    ])
      expect(n.get(call), call).toBeGreaterThan(0);
    // The allocator's life ends with nothing left: each reserve released, each page freed and unmapped.
    expect(n.get('aclrtReleaseMemAddress')).toBe(n.get('aclrtReserveMemAddress'));
    expect(n.get('aclrtFreePhysical')).toBe(n.get('aclrtMallocPhysical'));
    expect(n.get('aclrtUnmapMem')).toBe(n.get('aclrtMapMem'));
    // torch_npu grants no access itself: aclrtMapMem did (Note [ACL map grants access]).
    expect(n.get('aclrtMemSetAccess')).toBeUndefined();
    // No core call of the allocator's escapes the front end.
    expect([...n.keys()].filter((k) => /^(reserve|create|map|unmap|release|free)$/.test(k))).toEqual([]);
    // CANN's layers beneath each call, as the vendor names them.
    const all = calls(tracer.roots);
    expect(all).toContain('rts:rtMallocPhysical');
    expect(all).toContain('hal:halMemCreate');
    expect(all).toContain('svm:vmm_mmap');
    // Reserved as torch_npu's ExpandableSegment reserves: expectPtr NULL, flags 1.
    const reserves = tracer.roots.filter((x) => x.name === 'aclrtReserveMemAddress' && x.args[3] === 0);
    expect(reserves.length).toBeGreaterThan(0);
    for (const r of reserves) expect(r.args[4]).toBe(1);
    // Every page is ACL_HBM_MEM_HUGE on its device, 2 MiB or 20 MiB (E2).
    const sizes = new Set(tracer.roots.filter((r) => r.name === 'aclrtMallocPhysical').map((r) => r.args[1]));
    const props = tracer.roots.filter((r) => r.name === 'aclrtMallocPhysical').map((r) => r.args[2]);
    expect(props.every((p) => (p as { memAttr: number }).memAttr === 4)).toBe(true); // ACL_HBM_MEM_HUGE
    expect([...sizes].every((s) => s === 2 * 2 ** 20 || s === 20 * 2 ** 20)).toBe(true);
  });

  it('runs the native segments through aclrtMalloc and aclrtFree', () => {
    const tracer = new Tracer({ layers: 'vendor' });
    const run = replay(snapshot, {
      allocConf: 'expandable_segments:False',
      device: 'Ascend910B',
      startProcess: startOnFrontEnd({ vendor: 'npu', tracer }),
    }).allocators[0];
    expect(run.error).toBeUndefined();
    const n = counts(tracer.roots);
    expect(n.get('aclrtMalloc')).toBeGreaterThan(0);
    expect(n.get('aclrtFree')).toBe(n.get('aclrtMalloc'));
    expect(n.get('aclrtMapMem')).toBeUndefined();
  });

  it('stops at a breakpoint on aclrtMapMem with the process state there', () => {
    const tracer = new Tracer({ layers: 'vendor' });
    const seen: { mappings: number; vendor: string | undefined }[] = [];
    tracer.on('aclrtMapMem', (context) => {
      const state = context.describe();
      const mappings = state?.reservations.reduce((n, r) => n + r.mappings.length, 0) ?? -1;
      seen.push({ mappings, vendor: context.vendor });
    });
    replay(snapshot, {
      allocConf: 'expandable_segments:True',
      device: 'Ascend910B',
      startProcess: startOnFrontEnd({ vendor: 'npu', tracer }),
    });
    expect(tracer.listenerErrors).toEqual([]);
    expect(seen.length).toBe(counts(tracer.roots).get('aclrtMapMem'));
    expect(seen.every((s) => s.vendor === 'ACL')).toBe(true);
    // The break comes before the call's work: the first sees no mapping yet, the second the first's.
    expect(seen[0].mappings).toBe(0);
    expect(seen[1].mappings).toBe(1);
  });
});

describe('a CUDA-shaped snapshot as ROCm, on the HIP front end over an MI300X', () => {
  const snapshot = readSnapshotFile(`${WILD}/cs336-ctx128-forward.pickle.gz`);

  it("shows PyTorch's expandable segments as hipMem* calls over seed 1's layers", () => {
    const tracer = new Tracer({ layers: 'vendor' });
    const options = { allocConf: 'expandable_segments:True', device: 'MI300X' as const };
    const onHip = replay(snapshot, { ...options, startProcess: startOnFrontEnd({ vendor: 'rocm', tracer }) });
    const onCore = replay(snapshot, options);
    const run = onHip.allocators[0];
    expect(run.error).toBeUndefined();
    expect(run.peakReservedBytes).toBe(onCore.allocators[0].peakReservedBytes);
    const n = counts(tracer.roots);
    for (const call of [
      'hipMemAddressReserve',
      'hipMemCreate',
      'hipMemMap',
      'hipMemSetAccess',
      'hipMemUnmap',
      'hipMemRelease',
      'hipMemAddressFree',
    ])
      expect(n.get(call), call).toBeGreaterThan(0);
    expect(n.get('hipMemRelease')).toBe(n.get('hipMemCreate'));
    expect(n.get('hipMemAddressFree')).toBe(n.get('hipMemAddressReserve'));
    const all = calls(tracer.roots);
    expect(all.some((c) => c.includes('roc::Device'))).toBe(true);
    expect(all.some((c) => c.includes('hsa_amd_vmem_'))).toBe(true);
    expect(all.some((c) => c.includes('hsaKmt'))).toBe(true);
  });

  it("takes the MI300X's sizes from its spec, not the H200's", () => {
    const tracer = new Tracer({ layers: 'vendor' });
    replay(snapshot, {
      allocConf: 'expandable_segments:True',
      device: 'MI300X',
      startProcess: startOnFrontEnd({ vendor: 'rocm', tracer }),
    });
    // PyTorch reserves 1 1/8 of the device's memory per segment (E3), here of the MI300X's 192 GiB.
    const reserved = tracer.roots
      .filter((r) => r.name === 'hipMemAddressReserve')
      .map((r) => Number(r.args[1]));
    const total = 192 * 2 ** 30;
    for (const size of reserved) expect(size).toBeGreaterThanOrEqual(total + total / 8);
  });
});

describe("a front end's refusal reaches the allocator as core's would", () => {
  const snapshot = readSnapshotFile(`${WILD}/memsnapdump-multi-devices.pickle.gz`);
  // An Ascend part too small for the recording's peak (it holds the start): the front end runs out where core does.
  const small = {
    name: 'Ascend910B (320 MiB)',
    totalMemory: 320 * 2 ** 20,
    minimumGranularity: 2 * 2 ** 20,
    recommendedGranularity: 2 * 2 ** 20,
  };

  it('out of device memory through aclrtMallocPhysical is an allocator OOM, counted as on core', () => {
    const tracer = new Tracer({ layers: 'vendor' });
    const options = { allocConf: 'expandable_segments:True', device: small };
    const onAcl = replay(snapshot, {
      ...options,
      startProcess: startOnFrontEnd({ vendor: 'npu', device: small, tracer }),
    }).allocators[0];
    const onCore = replay(snapshot, options).allocators[0];
    expect(onAcl.error).toBeUndefined();
    expect(onCore.ooms).toBeGreaterThan(0);
    expect(onAcl.ooms).toBe(onCore.ooms);
    expect(onAcl.firstOom).toEqual(onCore.firstOom);
    // The refusal is ACL's own code for the allocation that failed (ACL_ERROR_RT_MEMORY_ALLOCATION).
    const refused = tracer.roots.filter((r) => r.name === 'aclrtMallocPhysical' && r.result !== 0);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((r) => r.result === 207001)).toBe(true);
  });
});

describe('a CUDA snapshot on the CUDA front end over an H200', () => {
  const snapshot = readSnapshotFile(`${WILD}/cs336-ctx128-forward.pickle.gz`);

  it("shows PyTorch's segments as the driver calls it makes, answering as core does", () => {
    for (const conf of ['expandable_segments:True', 'expandable_segments:False']) {
      const tracer = new Tracer({ layers: 'vendor' });
      const options = { allocConf: conf, device: 'H200' as const };
      const onCuda = replay(snapshot, {
        ...options,
        startProcess: startOnFrontEnd({ vendor: 'cuda', tracer }),
      });
      const onCore = replay(snapshot, options);
      const run = onCuda.allocators[0];
      expect(run.error, conf).toBeUndefined();
      expect(run.peakReservedBytes, conf).toBe(onCore.allocators[0].peakReservedBytes);
      const n = counts(tracer.roots);
      const calls =
        conf === 'expandable_segments:True'
          ? [
              'cuMemAddressReserve',
              'cuMemCreate',
              'cuMemMap',
              'cuMemSetAccess',
              'cuMemRelease',
              'cuMemAddressFree',
            ]
          : ['cuMemAlloc', 'cuMemFree'];
      for (const call of calls) expect(n.get(call), `${conf} ${call}`).toBeGreaterThan(0);
    }
  });
});
