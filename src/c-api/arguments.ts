/**
 * How C arguments look in vmmkit's C-shaped surfaces (the CUDA, HIP and ACL
 * front ends and the raw CUDA driver binding), declared once for all of
 * them (Note [One declaration of the C surface], cuda-structs.ts).
 */

/** An out-parameter, as C's `T*`: the call writes `value`. */
export interface Box<T> {
  value: T;
}

/** A C integer argument of 64 bits (size_t, CUdeviceptr, a handle): a number below 2^53, or a bigint. */
export type Size = number | bigint;
