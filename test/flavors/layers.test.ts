import { describe, expect, it } from 'vitest';
import { createMachine } from '../../src/compose/create-runtime.js';
import { Tracer, type TraceSpan } from '../../src/core/trace.js';
import { createAcl, createCuda, createHip } from '../../src/entry/processes.js';
import * as A from '../../src/flavors/acl/constants.js';
import { ACL_LAYERS } from '../../src/flavors/acl/layers.js';
import { layersFor } from '../../src/flavors/common/layers.js';
import { CUDA_LAYERS } from '../../src/flavors/cuda/layers.js';
import * as H from '../../src/flavors/hip/constants.js';
import type { HipFlavor } from '../../src/flavors/hip/hip.js';
import { formatHipState, HIP_LAYERS } from '../../src/flavors/hip/layers.js';
import { FaultyBackend } from '../support/faulty-backend.js';

/** A tree as indented "[layer] name" lines, without arguments or times. */
function outline(spans: readonly TraceSpan[], indent = ''): string[] {
  return spans.flatMap((s) => [`${indent}[${s.layer}] ${s.name}`, ...outline(s.children, `${indent}  `)]);
}

function find(spans: readonly TraceSpan[], name: string): TraceSpan | undefined {
  for (const s of spans) {
    if (s.name === name) return s;
    const inner = find(s.children, name);
    if (inner) return inner;
  }
  return undefined;
}

/** The names from a root down to every leaf, as chains. */
function chains(span: TraceSpan): string[][] {
  if (span.children.length === 0) return [[span.name]];
  return span.children.flatMap((c) => chains(c).map((chain) => [span.name, ...chain]));
}

/** True when `names` appear in this order along one chain from the root. */
function hasPath(span: TraceSpan, names: readonly string[]): boolean {
  return chains(span).some((chain) => {
    let i = 0;
    for (const n of chain) if (n === names[i]) i++;
    return i === names.length;
  });
}

const MiB2 = 2 * 1024 * 1024;
const hipProp = {
  type: H.hipMemAllocationTypePinned,
  requestedHandleTypes: H.hipMemHandleTypeNone,
  location: { type: H.hipMemLocationTypeDevice, id: 0 },
};
const hipRw = [
  { location: { type: H.hipMemLocationTypeDevice, id: 0 }, flags: H.hipMemAccessFlagsProtReadWrite },
];

/** Seed 1, section 6: the four steps and their undoing, checking every code. */
function hipSequence(hip: HipFlavor): void {
  const ptr = { value: 0n };
  const h = { value: 0n };
  expect(hip.hipMemAddressReserve(ptr, MiB2, 0, null, 0)).toBe(0);
  expect(hip.hipMemCreate(h, MiB2, hipProp, 0)).toBe(0);
  expect(hip.hipMemMap(ptr.value, MiB2, 0, h.value, 0)).toBe(0);
  expect(hip.hipMemSetAccess(ptr.value, MiB2, hipRw, 1)).toBe(0);
  expect(hip.hipMemUnmap(ptr.value, MiB2)).toBe(0);
  expect(hip.hipMemRelease(h.value)).toBe(0);
  expect(hip.hipMemAddressFree(ptr.value, MiB2)).toBe(0);
}

describe('HIP traces down ROCm’s path (seed 1)', () => {
  it('seed 1 section 6, call by call, in the layers and names of sections 4 and 7', () => {
    const tracer = new Tracer({ layers: 'vendor' });
    const hip = createHip({ tracer });
    hipSequence(hip);
    expect(outline(tracer.roots)).toEqual([
      '[hip] hipMemAddressReserve',
      '  [rocclr] roc::Device::virtualAlloc',
      '    [rocr] hsa_amd_vmem_address_reserve',
      '      [rocr] core::Runtime::VMemoryAddressReserve',
      '        [thunk] hsaKmtAllocMemoryAlign',
      '    [rocclr] CreateVirtualBuffer',
      '[hip] hipMemCreate',
      '  [rocclr] roc::Device::deviceVmemAlloc',
      '    [rocr] hsa_amd_vmem_handle_create',
      '      [rocr] core::Runtime::VMemoryHandleCreate',
      '  [hip] new hip::GenericAllocation',
      '[hip] hipMemMap',
      '  [hip] hip::GenericAllocation::retain',
      '  [rocclr] roc::Device::virtualMap',
      '    [rocclr] MapMemObjBookkeeping',
      '    [rocr] hsa_amd_vmem_map',
      '      [rocr] core::Runtime::VMemoryHandleMap',
      '    [rocclr] FinalizeMapMemObjBookkeeping',
      '[hip] hipMemSetAccess',
      '  [hip] ValidateSubBufferCoverage',
      '  [rocclr] roc::Device::SetMemAccess',
      '    [rocr] hsa_amd_vmem_set_access',
      '      [rocr] core::Runtime::VMemorySetAccess',
      '        [rocr] core::Runtime::VMemorySetAccessPerHandle',
      '          [rocr] KfdDriver::Map',
      '            [thunk] hsaKmtMemoryVaMap',
      '[hip] hipMemUnmap',
      '  [hip] ValidateSubBufferCoverage',
      '  [hip] SyncAllStreams',
      '  [rocclr] roc::Device::virtualUnmap',
      '    [rocr] hsa_amd_vmem_unmap',
      '      [thunk] hsaKmtMemoryVaUnmap',
      '  [hip] hip::GenericAllocation::release',
      '[hip] hipMemRelease',
      '  [hip] hip::GenericAllocation::release',
      '    [rocclr] roc::Device::deviceVmemRelease',
      '      [rocr] hsa_amd_vmem_handle_release',
      '        [thunk] hsaKmtFreeMemory',
      '[hip] hipMemAddressFree',
      '  [rocclr] roc::Device::virtualFree',
      '    [rocclr] DestroyVirtualBuffer',
      '    [rocr] hsa_amd_vmem_address_free',
      '      [thunk] hsaKmtFreeMemory',
    ]);
    // The first round of breakpoints (seed 1, section 7), each a chain from its API call.
    const [reserve, create, map, setAccess, unmap] = tracer.roots;
    expect(
      hasPath(reserve, [
        'hipMemAddressReserve',
        'roc::Device::virtualAlloc',
        'hsa_amd_vmem_address_reserve',
        'hsaKmtAllocMemoryAlign',
      ]),
    ).toBe(true);
    expect(
      hasPath(create, ['hipMemCreate', 'roc::Device::deviceVmemAlloc', 'hsa_amd_vmem_handle_create']),
    ).toBe(true);
    expect(hasPath(map, ['hipMemMap', 'roc::Device::virtualMap', 'hsa_amd_vmem_map'])).toBe(true);
    expect(
      hasPath(setAccess, [
        'hipMemSetAccess',
        'roc::Device::SetMemAccess',
        'hsa_amd_vmem_set_access',
        'hsaKmtMemoryVaMap',
      ]),
    ).toBe(true);
    expect(hasPath(unmap, ['hipMemUnmap', 'roc::Device::virtualUnmap', 'hsa_amd_vmem_unmap'])).toBe(true);
    // Every frame after the API call's is the vendor's: nothing of vmmkit's own layers is left.
    const layers = new Set(outline(tracer.roots).map((l) => l.trim().slice(1, l.trim().indexOf(']'))));
    expect([...layers].sort()).toEqual(['hip', 'rocclr', 'rocr', 'thunk']);
  });

  it('each frame carries the arguments of the step it stands for; the API call keeps its result and outs', () => {
    const tracer = new Tracer({ layers: 'vendor' });
    hipSequence(createHip({ tracer }));
    const [reserve, , map] = tracer.roots;
    expect(reserve.result).toBe(0);
    expect(typeof reserve.outs?.[0]).toBe('bigint');
    const base = Number(reserve.outs?.[0]);
    // roc::Device::virtualMap(va, size, allocation, offset): core's arguments.
    expect(find([map], 'roc::Device::virtualMap')?.args.slice(0, 2)).toEqual([base, MiB2]);
    // hsa_amd_vmem_map(va, size, handle, offset): the primitive's.
    expect(find([map], 'hsa_amd_vmem_map')?.args).toEqual([base, MiB2, 1, 0]);
    // hsaKmtMemoryVaMap(device, va, size, access): the page-table step's.
    expect(find(tracer.roots, 'hsaKmtMemoryVaMap')?.args).toEqual([0, base, MiB2, 3]);
    // Bookkeeping frames have no arguments of their own.
    expect(find([map], 'MapMemObjBookkeeping')?.args).toEqual([]);
  });

  it("section 4.6's sharing and queries, and hipMalloc's one pool allocation", () => {
    const machine = createMachine({ devices: ['MI300X'] });
    const tracer = new Tracer({ layers: 'vendor' });
    const a = createHip({ machine, tracer });
    const b = createHip({ machine, tracer });
    const prop = { ...hipProp, requestedHandleTypes: H.hipMemHandleTypePosixFileDescriptor };
    const ptr = { value: 0n };
    const h = { value: 0n };
    const fd = { value: 0 };
    expect(a.hipMemAddressReserve(ptr, MiB2, 0, null, 0)).toBe(0);
    expect(a.hipMemCreate(h, MiB2, prop, 0)).toBe(0);
    expect(a.hipMemMap(ptr.value, MiB2, 0, h.value, 0)).toBe(0);
    tracer.clear();
    expect(a.hipMemExportToShareableHandle(fd, h.value, H.hipMemHandleTypePosixFileDescriptor, 0)).toBe(0);
    const theirs = machine.passFd(a, fd.value, b);
    const imported = { value: 0n };
    expect(b.hipMemImportFromShareableHandle(imported, theirs, H.hipMemHandleTypePosixFileDescriptor)).toBe(
      0,
    );
    const retained = { value: 0n };
    expect(a.hipMemRetainAllocationHandle(retained, ptr.value)).toBe(0);
    const flags = { value: -1 };
    expect(a.hipMemGetAccess(flags, { type: H.hipMemLocationTypeDevice, id: 0 }, ptr.value)).toBe(0);
    const one = { value: 0n };
    expect(a.hipMalloc(one, 4096)).toBe(0);
    expect(a.hipFree(one.value)).toBe(0);
    expect(outline(tracer.roots)).toEqual([
      '[hip] hipMemExportToShareableHandle',
      '  [rocclr] roc::Device::ExportShareableVMMHandle',
      '    [rocr] hsa_amd_vmem_export_shareable_handle',
      '[hip] hipMemImportFromShareableHandle',
      '  [rocclr] roc::Device::ImportShareableVMMHandle',
      '    [rocclr] ImportShareableHSAHandle',
      '      [rocr] hsa_amd_vmem_import_shareable_handle',
      '  [hip] new hip::GenericAllocation',
      '[hip] hipMemRetainAllocationHandle',
      '  [hip] hip::GenericAllocation::retain',
      '[hip] hipMemGetAccess',
      '  [rocclr] roc::Device::GetMemAccess',
      '    [rocr] hsa_amd_vmem_get_access',
      '[hip] hipMalloc',
      '  [hip] ihipMalloc',
      '    [rocclr] amd::SvmBuffer::malloc',
      '      [rocclr] roc::Device::deviceLocalAlloc',
      '        [rocr] hsa_amd_memory_pool_allocate',
      '[hip] hipFree',
      '  [hip] ihipFree',
      '    [rocr] hsa_amd_memory_pool_free',
    ]);
  });

  it('a step that fails marks every frame of its path and skips the bookkeeping that follows success', () => {
    const machine = createMachine({ devices: ['MI300X'] });
    const faults = new FaultyBackend(machine.spawn());
    const tracer = new Tracer({ layers: 'vendor' });
    const hip = createHip({ backend: faults.backend, tracer });
    const ptr = { value: 0n };
    const h = { value: 0n };
    expect(hip.hipMemAddressReserve(ptr, MiB2, 0, null, 0)).toBe(0);
    expect(hip.hipMemCreate(h, MiB2, hipProp, 0)).toBe(0);
    tracer.clear();
    faults.arm(1);
    expect(hip.hipMemMap(ptr.value, MiB2, 0, h.value, 0)).not.toBe(0);
    const [map] = tracer.roots;
    expect(outline([map])).toEqual([
      '[hip] hipMemMap',
      '  [hip] hip::GenericAllocation::retain',
      '  [rocclr] roc::Device::virtualMap',
      '    [rocclr] MapMemObjBookkeeping',
    ]);
    // The injected failure comes from the backend before a traced primitive runs: core's map fails.
    expect(find([map], 'roc::Device::virtualMap')?.error).toMatch(/injected/);
    expect(map.result).not.toBe(0);
  });

  it('a primitive that fails marks each frame it stands for, and the steps above it', () => {
    const small = {
      name: 'small',
      totalMemory: 4 * MiB2,
      minimumGranularity: 4096,
      recommendedGranularity: MiB2,
    };
    const tracer = new Tracer({ layers: 'vendor' });
    const hip = createHip({ devices: [small], tracer });
    const h = { value: 0n };
    expect(hip.hipMemCreate(h, 4 * MiB2, hipProp, 0)).toBe(0);
    tracer.clear();
    expect(hip.hipMemCreate(h, MiB2, hipProp, 0)).toBe(H.hipErrorOutOfMemory);
    const [create] = tracer.roots;
    expect(outline([create])).toEqual([
      '[hip] hipMemCreate',
      '  [rocclr] roc::Device::deviceVmemAlloc',
      '    [rocr] hsa_amd_vmem_handle_create',
      '      [rocr] core::Runtime::VMemoryHandleCreate',
    ]);
    const frames = [
      'roc::Device::deviceVmemAlloc',
      'hsa_amd_vmem_handle_create',
      'core::Runtime::VMemoryHandleCreate',
    ];
    for (const name of frames) expect(find([create], name)?.error).toMatch(/memory/i);
    expect(create.result).toBe(H.hipErrorOutOfMemory);
  });

  it('a breakpoint on hsa_amd_vmem_map fires once per map, with the state before the map', () => {
    const tracer = new Tracer({ layers: 'vendor' });
    const hip = createHip({ tracer });
    const seen: { path: string[]; mapped: number; refcount: number; text: string }[] = [];
    tracer.on('hsa_amd_vmem_map', (context) => {
      const d = context.describe()!;
      seen.push({
        path: context.path.map((s) => s.name),
        mapped: d.reservations.reduce((n, r) => n + r.mappings.length, 0),
        refcount: d.allocations.reduce((n, a) => n + a.handleRefs + a.mapRefs, 0),
        text: formatHipState(d),
      });
      expect(context.vendor).toBe('HIP');
    });
    const ptr = { value: 0n };
    expect(hip.hipMemAddressReserve(ptr, 2 * MiB2, 0, null, 0)).toBe(0);
    const handles = [{ value: 0n }, { value: 0n }];
    for (const [i, h] of handles.entries()) {
      expect(hip.hipMemCreate(h, MiB2, hipProp, 0)).toBe(0);
      expect(hip.hipMemMap(ptr.value + BigInt(i * MiB2), MiB2, 0, h.value, 0)).toBe(0);
    }
    expect(seen.map((s) => s.mapped)).toEqual([0, 1]);
    // Before the second map: two GenericAllocations (1 + 1 handle reference) and the first one's sub-buffer.
    expect(seen.map((s) => s.refcount)).toEqual([1, 3]);
    expect(seen[0].path).toEqual(['hipMemMap', 'roc::Device::virtualMap', 'hsa_amd_vmem_map']);
    expect(seen[1].text).toContain(
      `sub-buffer 0x${ptr.value.toString(16)} +0x200000 <-> phys_mem_obj of hip::GenericAllocation 0x1`,
    );
    expect(seen[1].text).toContain(
      'hip::GenericAllocation 0x2: phys amd::Memory (ROCCLR_MEM_PHYMEM) 0x200000 on device 0; refcount 1 (1 handle, 0 sub-buffers)',
    );
    expect(tracer.listenerErrors).toEqual([]);
  });

  it('the state in seed 1’s object model, with each GenericAllocation’s one reference count', () => {
    const hip = createHip();
    const ptr = { value: 0n };
    const h = { value: 0n };
    expect(hip.hipMemAddressReserve(ptr, 2 * MiB2, 0, null, 0)).toBe(0);
    expect(hip.hipMemCreate(h, MiB2, hipProp, 0)).toBe(0);
    expect(hip.hipMemMap(ptr.value, MiB2, 0, h.value, 0)).toBe(0);
    expect(hip.hipMemSetAccess(ptr.value, MiB2, hipRw, 1)).toBe(0);
    expect(hip.hipMemRelease(h.value)).toBe(0);
    const base = `0x${ptr.value.toString(16)}`;
    const tail = `0x${(ptr.value + BigInt(MiB2)).toString(16)}`;
    expect(formatHipState(hip.runtime.describe()).split('\n')).toEqual([
      `HIP process ${hip.pid} (1 x AMD Instinct MI300X)`,
      `  parent virtual amd::Memory ${base} +0x400000 (kParent, VA only)`,
      `    sub-buffer ${base} +0x200000 <-> phys_mem_obj of hip::GenericAllocation 0x1 (offset 0x0); device 0 hipMemAccessFlagsProtReadWrite`,
      `    unmapped ${tail} +0x200000`,
      `  hip::GenericAllocation 0x1: phys amd::Memory (ROCCLR_MEM_PHYMEM) 0x200000 on device 0; refcount 1 (0 handle, 1 sub-buffer); sub-buffers at ${base}`,
    ]);
  });
});

describe('ACL and CUDA trace down their own layers', () => {
  it("ACL's seven steps (seed 2) go through CANN's runtime and driver", () => {
    const tracer = new Tracer({ layers: 'vendor' });
    const acl = createAcl({ tracer });
    expect(acl.aclInit(null)).toBe(0);
    expect(acl.aclrtSetDevice(0)).toBe(0);
    tracer.clear();
    const prop = {
      handleType: A.ACL_MEM_HANDLE_TYPE_NONE,
      allocationType: A.ACL_MEM_ALLOCATION_TYPE_PINNED,
      memAttr: A.ACL_HBM_MEM_HUGE,
      location: { id: 0, type: A.ACL_MEM_LOCATION_TYPE_DEVICE },
      reserve: 0,
    };
    const virPtr = { value: 0n };
    const handle = { value: 0n };
    const rw = [
      {
        flags: A.ACL_RT_MEM_ACCESS_FLAGS_READWRITE,
        location: { id: 0, type: A.ACL_MEM_LOCATION_TYPE_DEVICE },
      },
    ];
    expect(acl.aclrtReserveMemAddress(virPtr, MiB2, 0, null, 0)).toBe(0);
    expect(acl.aclrtMallocPhysical(handle, MiB2, prop, 0)).toBe(0);
    expect(acl.aclrtMapMem(virPtr.value, MiB2, 0, handle.value, 0)).toBe(0);
    expect(acl.aclrtMemSetAccess(virPtr.value, MiB2, rw, 1)).toBe(0);
    expect(acl.aclrtUnmapMem(virPtr.value)).toBe(0);
    expect(acl.aclrtFreePhysical(handle.value)).toBe(0);
    expect(acl.aclrtReleaseMemAddress(virPtr.value)).toBe(0);
    expect(outline(tracer.roots)).toEqual([
      '[acl] aclrtReserveMemAddress',
      '  [rts] rtReserveMemAddress',
      '    [rts] NpuDriver::ReserveMemAddress',
      '      [hal] halMemAddressReserve',
      '        [svm] vmm_malloc_va',
      '[acl] aclrtMallocPhysical',
      '  [rts] rtMallocPhysical',
      '    [rts] NpuDriver::MallocPhysical',
      '      [hal] halMemCreate',
      '        [svm] vmm_malloc_pa',
      '          [svm] svm_module_mem_malloc',
      '[acl] aclrtMapMem',
      '  [rts] rtMapMem',
      '    [rts] NpuDriver::MapMem',
      '      [hal] halMemMap',
      '        [svm] vmm_mmap',
      '          [svm] vmm_single_app_mmap',
      '            [svm] svm_svmm_add_seg',
      '[acl] aclrtMemSetAccess',
      '  [rts] rtMemSetAccess',
      '    [rts] NpuDriver::MemSetAccess',
      '      [hal] halMemSetAccess',
      '        [device] pte.set',
      '[acl] aclrtUnmapMem',
      '  [rts] rtUnmapMem',
      '    [rts] NpuDriver::UnmapMem',
      '      [hal] halMemUnmap',
      '        [svm] vmm_munmap',
      '          [svm] svm_svmm_del_seg',
      '          [svm] vmm_free_pa',
      '          [svm] svm_smm_client_unmap',
      '[acl] aclrtFreePhysical',
      '  [rts] rtFreePhysical',
      '    [rts] NpuDriver::FreePhysical',
      '      [hal] halMemRelease',
      '        [svm] vmm_free_pa',
      '[acl] aclrtReleaseMemAddress',
      '  [rts] rtReleaseMemAddress',
      '    [rts] NpuDriver::ReleaseMemAddress',
      '      [hal] halMemAddressFree',
      '        [svm] vmm_free_va',
    ]);
  });

  it('CUDA shows the driver API call over the kernel-mode driver’s steps; vmmkit’s core is left out', () => {
    const tracer = new Tracer({ layers: 'vendor' });
    const cu = createCuda({ tracer });
    const ctx = { value: 0n };
    expect(cu.cuInit(0)).toBe(0);
    expect(cu.cuDevicePrimaryCtxRetain(ctx, 0)).toBe(0);
    expect(cu.cuCtxSetCurrent(ctx.value)).toBe(0);
    tracer.clear();
    const prop = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } };
    const ptr = { value: 0n };
    const h = { value: 0n };
    expect(cu.cuMemAddressReserve(ptr, MiB2, 0, 0n, 0)).toBe(0);
    expect(cu.cuMemCreate(h, MiB2, prop, 0)).toBe(0);
    expect(cu.cuMemMap(ptr.value, MiB2, 0, h.value, 0)).toBe(0);
    expect(cu.cuMemSetAccess(ptr.value, MiB2, [{ location: { type: 1, id: 0 }, flags: 3 }], 1)).toBe(0);
    expect(cu.cuMemUnmap(ptr.value, MiB2)).toBe(0);
    expect(cu.cuMemRelease(h.value)).toBe(0);
    expect(cu.cuMemAddressFree(ptr.value, MiB2)).toBe(0);
    expect(outline(tracer.roots)).toEqual([
      '[cuda] cuMemAddressReserve',
      '  [kmd] kmd.reserveVa',
      '[cuda] cuMemCreate',
      '  [kmd] kmd.allocPhysical',
      '[cuda] cuMemMap',
      '  [kmd] kmd.bind',
      '[cuda] cuMemSetAccess',
      '  [kmd] kmd.setAccess',
      '    [kmd] kmd.mapPages',
      '[cuda] cuMemUnmap',
      '  [kmd] kmd.unbind',
      '    [kmd] kmd.unmapPages',
      '[cuda] cuMemRelease',
      '  [kmd] kmd.freePhysical',
      '[cuda] cuMemAddressFree',
      '  [kmd] kmd.freeVa',
    ]);
  });

  it('on the real NVIDIA backend a table keeps its upper layers and names the libcuda call that runs', () => {
    for (const table of [HIP_LAYERS, ACL_LAYERS, CUDA_LAYERS]) {
      const real = layersFor(table, 'cuda');
      expect(real.steps['backend:map']?.path).toEqual([{ layer: 'libcuda', name: 'cuMemMap' }]);
      expect(real.steps['backend:setAccess']?.path).toEqual([{ layer: 'libcuda', name: 'cuMemSetAccess' }]);
      expect(Object.keys(real.steps).filter((k) => k.includes('device:'))).toEqual([]);
      expect(real.steps['core:map']).toEqual(table.steps['core:map']);
      expect(layersFor(table, 'sim')).toBe(table);
    }
  });

  it("a backend of one's own names its kind; its process traces down the vendor's own layers", () => {
    const sim = createMachine().spawn();
    const own = (t: typeof sim, k: string | symbol) => {
      const v = Reflect.get(t, k, t);
      return typeof v === 'function' ? v.bind(t) : v;
    };
    const mine = new Proxy(sim, { get: (t, k) => (k === 'kind' ? 'mine' : own(t, k)) });
    const tracer = new Tracer();
    hipSequence(createHip({ backend: mine, tracer }));
    expect(mine.kind).toBe('mine');
    expect(outline(tracer.roots)[0]).toBe('[hip] hipMemAddressReserve');
    expect(outline(tracer.roots).join('\n')).not.toContain('[libcuda]');
    for (const table of [HIP_LAYERS, ACL_LAYERS, CUDA_LAYERS]) expect(layersFor(table, 'mine')).toBe(table);
  });

  it('with generic layers every flavor traces as before: [flavor] -> [core] -> [backend] -> [device]; vendor is the default', () => {
    const trees = [new Tracer(), new Tracer({ layers: 'generic' })].map((tracer) => {
      hipSequence(createHip({ tracer }));
      return outline(tracer.roots);
    });
    expect(trees[0]).not.toEqual(trees[1]);
    expect(trees[0][0]).toBe('[hip] hipMemAddressReserve');
    trees.shift();
    expect(trees[0].slice(0, 3)).toEqual([
      '[flavor] hipMemAddressReserve',
      '  [core] reserve',
      '    [backend] reserve',
    ]);
    expect(trees[0]).toContain('      [device] vm.bind');
    const layers = new Set(trees[0].map((l) => l.trim().slice(1, l.trim().indexOf(']'))));
    expect([...layers].sort()).toEqual(['backend', 'core', 'device', 'flavor']);
  });
});
