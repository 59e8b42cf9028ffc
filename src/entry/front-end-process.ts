/**
 * Replay on a vendor's front end (issue 31, section 3): the starter that
 * makes each allocator run's process a simulated machine of the vendor's
 * device behind its front end, with the allocator's VMM operations made
 * through that front end's C calls (Note [A runtime through a front end],
 * src/flavors/common/routed-runtime.ts). An NPU snapshot runs on ACL over an
 * Ascend 910B, its trace the life seed 2 writes (aclrtReserveMemAddress,
 * aclrtMallocPhysical, aclrtMapMem, aclrtUnmapMem, aclrtFreePhysical,
 * aclrtReleaseMemAddress); a ROCm snapshot on HIP over an MI300X, with seed
 * 1's layers (roc::Device, hsa_amd_vmem_*, hsaKmt*). Each device's
 * granularity and size are its simulated spec's (src/util/device-specs.ts).
 * A CUDA snapshot runs on the CUDA front end over an H200, its trace the
 * driver calls PyTorch's allocator makes (cuMemCreate, cuMemMap, ...,
 * cuMemAlloc for native segments).
 */
import type { DevicePreset, DeviceSpec } from '../compose/create-runtime.js';
import type { Tracer } from '../core/trace.js';
import type { AclFlavor } from '../flavors/acl/acl.js';
import { aclRoute } from '../flavors/acl/runtime-route.js';
import { routeThrough } from '../flavors/common/routed-runtime.js';
import type { CudaFlavor } from '../flavors/cuda/cuda.js';
import { cudaRoute } from '../flavors/cuda/runtime-route.js';
import type { HipFlavor } from '../flavors/hip/hip.js';
import { hipRoute } from '../flavors/hip/runtime-route.js';
import type { StartProcess } from '../replay/engine/process-start.js';
import type { SnapshotVendor } from '../replay/read/vendor.js';
import { createAcl, createCuda, createHip, type FlavorOptions } from './processes.js';

/** The front end and the simulated device each vendor's snapshots replay on. */
export const FRONT_END_OF: Readonly<
  Record<SnapshotVendor, { readonly frontEnd: 'ACL' | 'HIP' | 'CUDA'; readonly device: DevicePreset }>
> = Object.freeze({
  npu: { frontEnd: 'ACL', device: 'Ascend910B' },
  rocm: { frontEnd: 'HIP', device: 'MI300X' },
  cuda: { frontEnd: 'CUDA', device: 'H200' },
});

export interface FrontEndStartOptions {
  /** Whose snapshot it is (read/vendor.ts's detectVendor, or --vendor). */
  readonly vendor: SnapshotVendor;
  /** The simulated device, every device of the machine (default: the vendor's, FRONT_END_OF). */
  readonly device?: DevicePreset | DeviceSpec;
  /** Record every call through the vendor's layers. */
  readonly tracer?: Tracer;
  /**
   * How a front end is made from its options (default: the entry's
   * createAcl / createHip); a script's helpers pass their own, so that
   * `vmmkit inspect` sees the process as one the script made.
   */
  readonly createAcl?: (options: FlavorOptions) => AclFlavor;
  readonly createHip?: (options: FlavorOptions) => HipFlavor;
  readonly createCuda?: (options: FlavorOptions) => CudaFlavor;
}

/** Starts each run's process on `options.vendor`'s front end and device. */
export function startOnFrontEnd(options: FrontEndStartOptions): StartProcess {
  const { frontEnd, device: own } = FRONT_END_OF[options.vendor];
  const device = options.device ?? own;
  const makeAcl = options.createAcl ?? createAcl;
  const makeHip = options.createHip ?? createHip;
  const makeCuda = options.createCuda ?? createCuda;
  return ({ devices, report, observers }) => {
    const made: FlavorOptions = {
      devices: Array(Math.max(1, devices)).fill(device),
      report,
      observers,
      tracer: options.tracer,
    };
    if (frontEnd === 'ACL') {
      const acl = makeAcl(made);
      return routeThrough(acl.runtime, aclRoute(acl));
    }
    if (frontEnd === 'HIP') {
      const hip = makeHip(made);
      return routeThrough(hip.runtime, hipRoute(hip));
    }
    const cuda = makeCuda(made);
    return routeThrough(cuda.runtime, cudaRoute(cuda));
  };
}
