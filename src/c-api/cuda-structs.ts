/**
 * The structs of cuda.h that vmmkit's CUDA surfaces take and give back,
 * with the C field names.
 *
 * Note [One declaration of the C surface]
 * Two objects speak the C-shaped CUDA API: the CUDA front end
 * (src/flavors/cuda) and the raw driver binding (src/backends/cuda/driver.ts,
 * createRawCuda), and the conformance cases call either through one
 * interface. They share these declarations, so the structs, Box and Size are
 * declared here once, in a folder of their own that imports nothing. Neither
 * side imports the other for them: a front end never imports a backend (the
 * composition root makes its process; DESIGN.md, "Layers"), and the raw
 * binding stays free of front-end imports, so it can be loaded to record
 * what the driver answers with no vmmkit logic beside it.
 *
 * What stays declared elsewhere, and why:
 *  - the koffi layouts of the same structs and their byte offsets
 *    (driver-api.ts): they describe bytes, not these JS shapes, and are
 *    checked against cuda.h's sizes when the driver loads;
 *  - DecodedProp (driver-api.ts): what the checked layer reads back, every
 *    field present, not the argument type a caller fills in;
 *  - hipMemAllocationProp, hipMemAccessDesc, hipMemLocation (hip.ts) and
 *    ACL's aclrt* structs (acl.ts): HIP's and CANN's headers declare them as
 *    types of their own, programs name them so, and ACL's differ in fields;
 *    HIP's share CUDA's shape today, which an alias would make a promise.
 */

/** CUmemLocation */
export interface CUmemLocation {
  type: number;
  id: number;
}

/** CUmemAllocationProp's allocFlags. */
export interface CUmemAllocationFlags {
  compressionType: number;
  gpuDirectRDMACapable: number;
  usage: number;
}

/** CUmemAllocationProp (the front end reports allocFlags and win32HandleMetaData, it does not interpret them). */
export interface CUmemAllocationProp {
  type: number;
  requestedHandleTypes: number;
  location: CUmemLocation;
  win32HandleMetaData?: bigint | number | null;
  allocFlags?: Partial<CUmemAllocationFlags>;
}

/** CUmemAccessDesc */
export interface CUmemAccessDesc {
  location: CUmemLocation;
  flags: number;
}

/** CUexecAffinityParam: its type, and for CU_EXEC_AFFINITY_TYPE_SM_COUNT (0) the number of SMs. */
export interface CUexecAffinityParam {
  type: number;
  param: { smCount: { val: number } };
}

/** CUctxCigParam: the graphics client's data (a D3D12 command queue, or a Vulkan blob). */
export interface CUctxCigParam {
  sharedDataType: number;
  sharedData: bigint | number | null;
}

/**
 * cuCtxCreate's arguments after pctx, in either header's form: (flags, dev)
 * before CUDA 13.0, (ctxCreateParams, flags, dev) in 13.0's cuda.h.
 */
export type CuCtxCreateArguments =
  | [flags: number, dev: number]
  | [ctxCreateParams: CUctxCreateParams | null, flags: number, dev: number];

/** CUctxCreateParams, cuCtxCreate_v4's (cuda.h 13.0): NULL pointers are null; `{}` is all NULL, as C's `= {}`. */
export interface CUctxCreateParams {
  execAffinityParams?: readonly CUexecAffinityParam[] | null;
  numExecAffinityParams?: number;
  cigParams?: CUctxCigParam | null;
}
