/**
 * The front ends' create functions: each makes a process with the
 * composition root (src/compose) and hands it to its flavor, which never
 * makes one itself. `createHip()`, `new HipFlavor(createProcess(...))` and a
 * script's `createHip` thus start the same machine.
 */
import {
  createProcess,
  type Machine,
  type ProcessOptions,
  type VmmProcess,
} from '../compose/create-runtime.js';
import { AclFlavor } from '../flavors/acl/acl.js';
import { reportOneLine } from '../flavors/common/process.js';
import { CudaFlavor } from '../flavors/cuda/cuda.js';
import { HipFlavor } from '../flavors/hip/hip.js';

/**
 * Options every front end's create function takes: the composition root's
 * (backend 'sim' or 'cuda' or a Backend object, the devices or machine to
 * join, libcuda's paths, a tracer, a report hook, observers).
 */
export type FlavorOptions = ProcessOptions;

/** Options of createAcl: as every flavor's, with one Ascend 910B as the default machine. */
export type AclOptions = FlavorOptions;

/** The simulated machine of a HIP process that names none. */
const HIP_DEFAULT_DEVICES = ['MI300X'] as const;
/** The simulated machine of an ACL process that names none. */
const ACL_DEFAULT_DEVICES = ['Ascend910B'] as const;

/**
 * A vendor's default simulated machine (HIP: an MI300X, ACL: an Ascend
 * 910B), applied only where options leave the machine open: a simulated
 * process that names no devices and joins no machine, so a real backend is
 * never handed devices it does not take.
 */
export function withDefaultDevices(
  options: FlavorOptions,
  devices: NonNullable<FlavorOptions['devices']>,
): FlavorOptions {
  const simulated = options.backend === undefined || options.backend === 'sim';
  return simulated && options.machine === undefined && options.devices === undefined
    ? { ...options, devices }
    : options;
}

/** The process a front end runs on: the composition root's, reporting one line per problem unless told otherwise. */
export function frontEndProcess(options: FlavorOptions): VmmProcess {
  return createProcess(options.report === undefined ? { ...options, report: reportOneLine } : options);
}

/** A process using the CUDA driver API, on a simulated machine (default: one H200) or real NVIDIA hardware. */
export function createCuda(options: FlavorOptions = {}): CudaFlavor<Machine> {
  return new CudaFlavor(frontEndProcess(options));
}

/**
 * A process using the HIP runtime API. On the simulator the machine is one
 * AMD Instinct MI300X unless options name devices or a machine to join.
 */
export function createHip(options: FlavorOptions = {}): HipFlavor<Machine> {
  return new HipFlavor(frontEndProcess(withDefaultDevices(options, HIP_DEFAULT_DEVICES)));
}

/** A process using Ascend ACL, on a simulated machine (default: one Ascend 910B). */
export function createAcl(options: AclOptions = {}): AclFlavor<Machine> {
  return new AclFlavor(frontEndProcess(withDefaultDevices(options, ACL_DEFAULT_DEVICES)));
}
