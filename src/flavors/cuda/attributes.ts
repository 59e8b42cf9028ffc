/**
 * cuDeviceGetAttribute's answers (Note [Device attributes]).
 *
 * Note [Device attributes]
 * A device answers from the attributes the runtime reports for it
 * (DeviceInfo.driverAttributes), wherever they came from. Over the real
 * driver the CUDA backend reads every attribute of each device when it
 * opens it (Note [Driver device facts]), so the answers are the part's own,
 * whatever the part. The simulated NVIDIA H200 reports the real part's: its
 * preset (src/backends/sim/presets.ts) carries what
 * conformance/gpu/device-attributes.py read from an H200 on driver
 * 580.159.04 (CUDA 13.0) into conformance/results/h200-device-attributes.json
 * (147 of them: ids 1 to 147, four past the last one cuda.h 13.0 names),
 * held in src/backends/sim/h200-attributes.ts, and
 * test/flavors/cuda/attributes.test.ts compares every answer with the file,
 * so the table cannot drift from it. An id the part did not answer is
 * CUDA_ERROR_INVALID_VALUE, as there (attribute.badNumbers). The part
 * answers 1 for fabric handles and generic compression: the attribute says
 * what the hardware supports, not what this process may do, and on the real
 * machine cuMemCreate of a fabric handle still answers
 * CUDA_ERROR_NOT_PERMITTED without an IMEX channel, as the simulated one does.
 *
 * A device with no attributes (another preset, a custom simulated device
 * whose spec gives none) answers the front end's own rules, which hold on
 * every simulated device: VMM is supported, POSIX fds can be exported,
 * Windows handles cannot (the simulator is Linux), fabric handles cannot (no
 * IMEX channel), compressible memory is not modelled, compute mode is the
 * default. Its hardware attributes are CUDA_ERROR_INVALID_VALUE: no CUDA
 * part other than the H200 is modelled, and the MI300X and Ascend presets
 * have no CUDA values to publish.
 */
import type { DeviceInfo } from '../../core/types.js';
import * as C from './constants.js';

/** Attributes whose value is the front end's own rule, the same on every simulated device without a record. */
const RULES: ReadonlyMap<number, number> = new Map([
  [C.CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, C.CU_COMPUTE_MODE_DEFAULT],
  [C.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1],
  [C.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 1],
  [C.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED, 0],
  [C.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED, 0],
  [C.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, 0],
  [C.CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, 0],
]);

/** Hardware attributes: answered only from a part's record. */
const HARDWARE: readonly number[] = [
  C.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
  C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
  C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
  C.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED,
  C.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
];

/** The attributes a device with no record answers on some device (its rules and, never, hardware facts). */
export const ANSWERED_ATTRIBUTES: readonly number[] = Object.freeze([...RULES.keys(), ...HARDWARE]);

/** The value of `attribute` on `device`, or undefined when it is not known (see the Note). */
export function deviceAttribute(device: DeviceInfo, attribute: number): number | undefined {
  return device.driverAttributes !== undefined
    ? device.driverAttributes.get(attribute)
    : RULES.get(attribute);
}
