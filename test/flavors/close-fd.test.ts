/**
 * Closing an exported fd (VendorProcess.close, POSIX close(2) on the
 * process's fd table): the memory behind an fd stays held while the fd is
 * open, even after every handle is released, and goes at the close; core's
 * export count falls with it. A second close, or a bad descriptor, is -1.
 */
import { describe, expect, it } from 'vitest';
import { createCuda, createHip } from '../../src/entry/processes.js';
import * as CU from '../../src/flavors/cuda/constants.js';
import * as H from '../../src/flavors/hip/constants.js';

const G = 2 * 1024 * 1024;

interface Exporter {
  readonly process: {
    close(fd: unknown): number;
    dispose(): void;
    runtime: import('../../src/core/runtime.js').Runtime;
  };
  /** Create a 2 MiB fd-exportable handle, export it, and return [handle, fd]. */
  createAndExport(): [bigint, number];
  release(h: bigint): number;
  free(): number;
}

function cudaExporter(): Exporter {
  const cu = createCuda();
  expect(cu.cuInit(0)).toBe(0);
  const ctx = { value: 0n };
  expect(cu.cuDevicePrimaryCtxRetain(ctx, 0)).toBe(0);
  expect(cu.cuCtxSetCurrent(ctx.value)).toBe(0);
  const prop = {
    type: CU.CU_MEM_ALLOCATION_TYPE_PINNED,
    requestedHandleTypes: CU.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
    location: { type: CU.CU_MEM_LOCATION_TYPE_DEVICE, id: 0 },
  };
  return {
    process: cu,
    createAndExport() {
      const h = { value: 0n };
      expect(cu.cuMemCreate(h, G, prop, 0)).toBe(0);
      const fd = { value: 0 };
      expect(
        cu.cuMemExportToShareableHandle(fd, h.value, CU.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
      ).toBe(0);
      return [h.value, fd.value];
    },
    release: (h) => cu.cuMemRelease(h),
    free() {
      const free = { value: 0 };
      expect(cu.cuMemGetInfo(free, { value: 0 })).toBe(0);
      return Number(free.value);
    },
  };
}

function hipExporter(): Exporter {
  const hip = createHip();
  const prop = {
    type: H.hipMemAllocationTypePinned,
    requestedHandleTypes: H.hipMemHandleTypePosixFileDescriptor,
    location: { type: H.hipMemLocationTypeDevice, id: 0 },
  };
  return {
    process: hip,
    createAndExport() {
      const h = { value: 0n };
      expect(hip.hipMemCreate(h, G, prop, 0)).toBe(0);
      const fd = { value: 0 };
      expect(hip.hipMemExportToShareableHandle(fd, h.value, H.hipMemHandleTypePosixFileDescriptor, 0)).toBe(
        0,
      );
      return [h.value, fd.value];
    },
    release: (h) => hip.hipMemRelease(h),
    free() {
      const free = { value: 0 };
      expect(hip.hipMemGetInfo(free, { value: 0 })).toBe(0);
      return Number(free.value);
    },
  };
}

describe.each([
  ['CUDA', cudaExporter],
  ['HIP', hipExporter],
])('%s: close(fd) gives back an exported descriptor', (_, make) => {
  it('the memory behind an open fd stays after the release and goes at the close', () => {
    const e = make();
    const baseline = e.free();
    const [h, fd] = e.createAndExport();
    const [a] = e.process.runtime.describe().allocations;
    expect(a?.exports).toBe(1);
    expect(e.release(h)).toBe(0);
    expect(e.free()).toBe(baseline - G);
    expect(e.process.close(fd)).toBe(0);
    expect(e.free()).toBe(baseline);
    expect(e.process.close(fd)).toBe(-1);
    e.process.dispose();
  });

  it('closing lowers the export count of a live handle; bad descriptors are -1 and change nothing', () => {
    const e = make();
    const [, fd] = e.createAndExport();
    const exportsOf = () => e.process.runtime.describe().allocations[0]?.exports;
    for (const bad of [-1, 1.5, Number.NaN, '3', null, 10n, fd + 1000]) expect(e.process.close(bad)).toBe(-1);
    expect(exportsOf()).toBe(1);
    expect(e.process.close(fd)).toBe(0);
    expect(exportsOf()).toBe(0);
    e.process.dispose();
    expect(e.process.close(fd)).toBe(-1);
  });
});
