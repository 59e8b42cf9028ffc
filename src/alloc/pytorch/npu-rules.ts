/**
 * torch_npu's NPUCachingAllocator, as far as it differs from PyTorch's
 * CUDACachingAllocator: the rules NPU1-NPU12 of docs/npu-allocator.md, read
 * in Ascend/pytorch at tag v7.1.0-pytorch2.6.0
 * (torch_npu/csrc/core/npu/NPUCachingAllocator.cpp).
 *
 * Note [torch_npu's allocator]: torch_npu's allocator is PyTorch's of the
 * 2.1-2.6 line carried over to ACL (the same pools, best fit, split and
 * merge rules, expandable segments of 2 MiB pages in the small pool and 20
 * MiB pages in the large one, the same OOM path), so it is not a second
 * model but PyTorch's with these rules changed, which PytorchCachingAllocator
 * takes from its settings' `npu` field:
 * - NPU2 round_size adds 32 bytes to every request before rounding it up to
 *   512 (so a 512-byte request takes 1024), and knows no
 *   roundup_power2_divisions;
 * - NPU5 under expandable segments, a request of 2 MiB or more served by a
 *   block whose address is not a multiple of base_addr_aligned_kb (16 KiB
 *   by default) is moved up to the next multiple: the bytes before it are
 *   split off as a free block of their own;
 * - NPU8 a request never takes an oversize block more than 20 MiB larger
 *   (kLargeBuffer, fixed: no max_non_split_rounding_mb).
 * The rest (NPU1, NPU3, NPU4, NPU6, NPU7, NPU9-NPU12) say where torch_npu
 * agrees with PyTorch, which the model then already does.
 */
import { KiB, MIN_BLOCK_SIZE } from './sizes.js';

/** NPU2: the bytes round_size adds to every request before rounding (NPUCachingAllocator.cpp:2014). */
export const NPU_REQUEST_PADDING = 32;
/** NPU5: kAlignRoundLarge, base_addr_aligned_kb's default and largest value (NPUCachingAllocator.cpp:96). */
export const NPU_ALIGN_ROUND_LARGE = 16 * KiB;

/** What torch_npu's allocator adds to PyTorch's settings (PYTORCH_NPU_ALLOC_CONF's own keys). */
export interface NpuSettings {
  /** NPU5 base_addr_aligned_kb in bytes: 0 (off) to 16 KiB, default 16 KiB. */
  readonly baseAddrAlignedSize: number;
}

export const DEFAULT_NPU_SETTINGS: NpuSettings = Object.freeze({
  baseAddrAlignedSize: NPU_ALIGN_ROUND_LARGE,
});

/** NPU2, round_size: the block size a request of `size` bytes takes on torch_npu. */
export function npuRoundSize(size: number): number {
  const padded = size + NPU_REQUEST_PADDING;
  if (padded < MIN_BLOCK_SIZE) return MIN_BLOCK_SIZE;
  return Math.ceil(padded / MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE;
}

/**
 * NPU5: how many bytes at the front of a free block at `ptr` of `blockSize`
 * bytes are split off so that a `size`-byte block starts aligned (0: none).
 * Applies only under expandable segments, to sizes of kRoundLarge (2 MiB)
 * or more, and only where the aligned block still fits.
 */
export function npuAlignmentOffset(ptr: number, blockSize: number, size: number, align: number): number {
  if (align === 0 || size < 2 * 1024 * KiB || ptr % align === 0) return 0;
  const offset = align - (ptr % align);
  return offset + size <= blockSize ? offset : 0;
}

/** Check NpuSettings made by hand; returns them frozen, or a message. */
export function npuSettingsProblem(s: NpuSettings): string | undefined {
  const a = s.baseAddrAlignedSize;
  if (!(Number.isSafeInteger(a) && a >= 0 && a <= NPU_ALIGN_ROUND_LARGE && a % KiB === 0))
    return `baseAddrAlignedSize ${a} must be a whole number of KiB from 0 to 16 KiB`;
  return undefined;
}
