/**
 * hipGetDeviceProperties' answers (Note [HIP device properties]).
 *
 * Note [HIP device properties]
 * hipDeviceProp_t has some ninety fields; vmmkit writes the ones VMM programs
 * read: name, totalGlobalMem, multiProcessorCount and the compute capability
 * (major, minor). Name and total memory are the simulated device's own. The
 * rest belong to a part and are given only where a source says them:
 *  - AMD Instinct MI300X, from AMD's published specifications (the MI300X
 *    data sheet: 304 compute units; its LLVM target is gfx942, which HIP
 *    reports as major 9, minor 4), not read from a ROCm driver;
 *  - NVIDIA H200 (HIP on NVIDIA), the values the real part's
 *    cuDeviceGetAttribute answered (Note [Device attributes]);
 *  - over the real driver (HIP over CUDA), whatever part is there: the
 *    driver's own attributes (Note [Driver device facts] in the CUDA backend).
 * A device with no such row (a custom simulated device, the Ascend preset)
 * answers hipErrorInvalidValue rather than a struct with invented numbers.
 * hipDeviceGetAttribute answers the same facts one at a time, plus two of
 * the front end's own rules that hold on every simulated device (VMM is
 * supported, compute mode is the default); any other attribute is
 * hipErrorInvalidValue. The attribute numbers are ROCm 6's
 * (hip_runtime_api.h; ROCm 5 numbered them differently).
 */
import { deviceAttribute } from '../cuda/attributes.js';
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

type PartFacts = Pick<hipDeviceProp_t, 'multiProcessorCount' | 'major' | 'minor'>;

/** AMD's published figures for its parts (see the Note). */
const PUBLISHED: ReadonlyMap<string, PartFacts> = new Map([
  ['AMD Instinct MI300X', { multiProcessorCount: 304, major: 9, minor: 4 }],
]);

/**
 * The facts of the part named `name`, or undefined when no source gives them;
 * over a real driver, from the driver's own attributes (Note [Driver device facts]).
 */
function partFacts(name: string, driver?: ReadonlyMap<number, number>): PartFacts | undefined {
  if (driver !== undefined) {
    const sm = driver.get(CU.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    const major = driver.get(CU.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    const minor = driver.get(CU.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    if (sm === undefined || major === undefined || minor === undefined) return undefined;
    return { multiProcessorCount: sm, major, minor };
  }
  const published = PUBLISHED.get(name);
  if (published !== undefined) return published;
  const sm = deviceAttribute(name, CU.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  const major = deviceAttribute(name, CU.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  const minor = deviceAttribute(name, CU.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  if (sm === undefined || major === undefined || minor === undefined) return undefined;
  return { multiProcessorCount: sm, major, minor };
}

/** The properties of a device named `name` with `totalMemory` bytes, or undefined (see the Note). */
export function deviceProperties(
  name: string,
  totalMemory: number,
  driver?: ReadonlyMap<number, number>,
): hipDeviceProp_t | undefined {
  const facts = partFacts(name, driver);
  if (facts === undefined) return undefined;
  return Object.freeze({ name, totalGlobalMem: totalMemory, ...facts });
}

/** hipDeviceGetAttribute's value of `attribute` on a device named `name`, or undefined (see the Note). */
export function hipDeviceAttribute(
  name: string,
  attribute: number,
  driver?: ReadonlyMap<number, number>,
): number | undefined {
  // HIP over CUDA: the driver's answers (hipComputeMode numbers CUDA's compute modes alike).
  if (attribute === C.hipDeviceAttributeVirtualMemoryManagementSupported)
    return driver?.get(CU.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) ?? 1;
  if (attribute === C.hipDeviceAttributeComputeMode)
    return driver?.get(CU.CU_DEVICE_ATTRIBUTE_COMPUTE_MODE) ?? C.hipComputeModeDefault;
  const facts = partFacts(name, driver);
  if (facts === undefined) return undefined;
  if (attribute === C.hipDeviceAttributeMultiprocessorCount) return facts.multiProcessorCount;
  if (attribute === C.hipDeviceAttributeComputeCapabilityMajor) return facts.major;
  if (attribute === C.hipDeviceAttributeComputeCapabilityMinor) return facts.minor;
  return undefined;
}
