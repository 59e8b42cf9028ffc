/**
 * cuDeviceGetAttribute's answers (Note [Device attributes]).
 *
 * Note [Device attributes]
 * Two kinds of attribute are answered. The VMM ones describe what this
 * front end does, so they come from its own rules and hold on every
 * simulated device: VMM is supported, POSIX fds can be exported, Windows
 * handles cannot (the simulator is Linux), fabric handles cannot (cuMemCreate
 * answers CUDA_ERROR_NOT_PERMITTED without an IMEX channel), and compressible
 * memory is not modelled. The hardware ones (SM count, compute capability,
 * GPUDirect RDMA) belong to a part: they are given for the NVIDIA H200 from
 * NVIDIA's published specifications (H200 datasheet and the Hopper
 * architecture whitepaper: 132 SMs, compute capability 9.0, GPUDirect RDMA),
 * not read from a driver: the H200's driver values are not recorded yet. A
 * device with no published row (a custom simulated device) answers those
 * with CUDA_ERROR_INVALID_VALUE rather than an invented number; compute mode
 * is the default mode on every simulated machine.
 */
import * as C from './constants.js';

/** Attributes whose value is the front end's own rule, the same on every simulated device. */
const RULES = new Map([
  [C.CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, C.CU_COMPUTE_MODE_DEFAULT],
  [C.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1],
  [C.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 1],
  [C.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED, 0],
  [C.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED, 0],
  [C.CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, 0],
  [C.CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, 0],
]);
/** Hardware attributes of the parts, from the vendor's published specifications (see the Note). */
const PUBLISHED = new Map([
  [
    'NVIDIA H200',
    new Map([
      [C.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132],
      [C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9],
      [C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0],
      [C.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, 1],
      [C.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, 1],
    ]),
  ],
]);
/** The value of `attribute` on a device named `deviceName`, or undefined when it is not known. */
export function deviceAttribute(deviceName, attribute) {
  return RULES.get(attribute) ?? PUBLISHED.get(deviceName)?.get(attribute);
}
/** True for a CUdevice_attribute cuda.h defines (1 to 143, some numbers unused). */
export function isDeviceAttribute(attribute) {
  return Number.isInteger(attribute) && attribute >= 1 && attribute < C.CU_DEVICE_ATTRIBUTE_MAX;
}
//# sourceMappingURL=attributes.js.map
