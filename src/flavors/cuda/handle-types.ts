/** The CUDA driver's opaque C types as the front end takes them: a bigint, or a number where the types allow. */
export type CUdeviceptr = bigint | number;
export type CUhandle = bigint | number;
export type CUstream = bigint | number;
export type CUevent = bigint | number;
export type CUcontext = bigint | number;
