/**
 * hipGetDeviceProperties' answers (Note [HIP device properties]).
 *
 * Note [HIP device properties]
 * hipDeviceProp_t has some ninety fields; vmmkit writes the ones VMM programs
 * read: name, totalGlobalMem, multiProcessorCount and the compute capability
 * (major, minor). Name and total memory are the device's own. The rest
 * belong to a part and are given only where the device the runtime reports
 * carries a source for them:
 *  - its driver's attributes (DeviceInfo.driverAttributes, CUDA's numbering):
 *    over the real driver (HIP over CUDA) whatever part is there (Note
 *    [Driver device facts] in the CUDA backend), and the simulated NVIDIA
 *    H200 (HIP on NVIDIA), whose preset has the values the real part's
 *    cuDeviceGetAttribute answered (Note [Device attributes]);
 *  - else its vendor's published figures (DeviceInfo.published): the
 *    simulated AMD Instinct MI300X's preset has the MI300X data sheet's, not
 *    read from a ROCm driver (src/backends/sim/presets.ts).
 * A device with neither (a custom simulated device, the Ascend preset)
 * answers hipErrorInvalidValue rather than a struct with invented numbers.
 * hipDeviceGetAttribute answers the same facts one at a time, plus two of
 * the front end's own rules that hold on every simulated device (VMM is
 * supported, compute mode is the default); any other attribute is
 * hipErrorInvalidValue. The attribute numbers are ROCm 6's
 * (hip_runtime_api.h; ROCm 5 numbered them differently).
 */
import type { DeviceInfo, PublishedFacts } from '../../core/types.js';
import * as CU from '../cuda/constants.js';
import * as C from './constants.js';

/** The fields of hipDeviceProp_t vmmkit writes. */
export interface hipDeviceProp_t {
  readonly name: string;
  readonly totalGlobalMem: number;
  readonly multiProcessorCount: number;
  readonly major: number;
  readonly minor: number;
}

/** The facts of the part `device` is, or undefined when it carries no source for them (see the Note). */
function partFacts(device: DeviceInfo): PublishedFacts | undefined {
  const driver = device.driverAttributes;
  if (driver === undefined) return device.published;
  const sm = driver.get(CU.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  const major = driver.get(CU.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  const minor = driver.get(CU.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  if (sm === undefined || major === undefined || minor === undefined) return undefined;
  return { multiProcessorCount: sm, major, minor };
}

/** The properties of `device`, or undefined (see the Note). */
export function deviceProperties(device: DeviceInfo): hipDeviceProp_t | undefined {
  const facts = partFacts(device);
  if (facts === undefined) return undefined;
  const { multiProcessorCount, major, minor } = facts;
  return Object.freeze({
    name: device.name,
    totalGlobalMem: device.totalMemory,
    multiProcessorCount,
    major,
    minor,
  });
}

/** hipDeviceGetAttribute's value of `attribute` on `device`, or undefined (see the Note). */
export function hipDeviceAttribute(device: DeviceInfo, attribute: number): number | undefined {
  const driver = device.driverAttributes;
  // HIP over CUDA: the driver's answers (hipComputeMode numbers CUDA's compute modes alike).
  if (attribute === C.hipDeviceAttributeVirtualMemoryManagementSupported)
    return driver?.get(CU.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) ?? 1;
  if (attribute === C.hipDeviceAttributeComputeMode)
    return driver?.get(CU.CU_DEVICE_ATTRIBUTE_COMPUTE_MODE) ?? C.hipComputeModeDefault;
  const facts = partFacts(device);
  if (facts === undefined) return undefined;
  if (attribute === C.hipDeviceAttributeMultiprocessorCount) return facts.multiProcessorCount;
  if (attribute === C.hipDeviceAttributeComputeCapabilityMajor) return facts.major;
  if (attribute === C.hipDeviceAttributeComputeCapabilityMinor) return facts.minor;
  return undefined;
}
