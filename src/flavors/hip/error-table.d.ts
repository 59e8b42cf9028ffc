import type { ErrorTable } from '../common/error-table.js';
/**
 * hipError_t for each core error kind, as ROCm's hip_vm.cpp answers: it
 * reports almost every failed VMM step (bad handle, failed map, failed
 * import or export) as hipErrorInvalidValue.
 *
 * Note [HIP in-use is Unknown]: the only "still in use" failure HIP reports
 * is hipMemAddressFree over a range with mappings inside: virtualFree fails
 * and the call answers hipErrorUnknown (999).
 *
 * Note [HIP access faults]: ROCm does not check page permissions before a
 * copy; the GPU faults and the error surfaces as hipErrorIllegalAddress.
 * The simulator checks at the call, and answers with that code.
 */
export declare const HIP_ERROR_TABLE: ErrorTable;
