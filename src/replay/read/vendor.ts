/**
 * Which machine made a snapshot: CUDA, ROCm (PyTorch built for HIP) or
 * Ascend's torch_npu.
 *
 * Note [Snapshot vendor]: the three write the same pickle (segments,
 * device_traces, the same actions), and none of them names its vendor, so
 * the vendor is read from what differs:
 * - frames: torch_npu's Python package (`site-packages/torch_npu/...`, which
 *   every `torch.npu.memory` call passes through) or its C++ names
 *   (`c10_npu::`, `libtorch_npu`, `NPUCachingAllocator`, `acl*` runtime
 *   calls); ROCm's HIP libraries (`libamdhip64`, `/opt/rocm`, `hipMalloc`,
 *   `c10::hip::`, `HIPCachingAllocator`). A frame names a file, so this is
 *   the strongest evidence and it decides when present.
 * - settings keys: torch_npu's snapshot carries no `allocator_settings`
 *   (torch_npu/csrc/npu/Module.cpp, THNPModule_memorySnapshot writes only
 *   segments and device_traces); PyTorch since 2.1 writes one with
 *   `PYTORCH_CUDA_ALLOC_CONF` (ROCm's build too, its hipified copy of the
 *   same code). A dict naming `PYTORCH_NPU_ALLOC_CONF` says NPU; one naming
 *   `PYTORCH_HIP_ALLOC_CONF` says ROCm.
 * - streams: CUDA and ROCm record the default stream as 0 (a null
 *   cudaStream_t / hipStream_t); torch_npu's default stream is a real
 *   aclrtStream, written as the pointer's value. A trace with events and no
 *   event or segment on stream 0 is shaped like torch_npu's.
 * - no `time_us`: torch_npu's trace entries have none (Module.cpp writes
 *   action, addr, size, stream); PyTorch's have had one since 2.1, though
 *   older PyTorch lacks it too, so this only supports the stream evidence.
 * - device names: neither PyTorch's nor torch_npu's snapshot records one
 *   (a segment has only its device index), so there are none to read.
 * Without frames or settings, pointer-like streams and no time_us
 * together say NPU; anything else is taken for CUDA, and the evidence says
 * it was the default. `--vendor` overrides the guess.
 */
import type { MemorySnapshot } from './snapshot.js';

export type SnapshotVendor = 'cuda' | 'rocm' | 'npu';

export const SNAPSHOT_VENDORS: readonly SnapshotVendor[] = ['cuda', 'rocm', 'npu'];

/** The vendor a snapshot is taken for and why, in short phrases a person reads. */
export interface VendorGuess {
  readonly vendor: SnapshotVendor;
  /** What decided it, strongest first; empty never (the default says so). */
  readonly evidence: readonly string[];
  /** 'frames' and 'settings' are read from the file; 'shape' from streams and time_us; 'default' is CUDA for want of any; 'option' is --vendor. */
  readonly basis: 'frames' | 'settings' | 'shape' | 'default' | 'option';
}

/** A filename or function name that only torch_npu's stacks hold. */
const NPU_FRAME =
  /(^|[/\\])torch_npu([/\\]|$)|libtorch_npu|c10_npu::|at_npu::|torch_npu::|NPUCachingAllocator|libascendcl|\baclrt[A-Z]/;
/** A filename or function name that only ROCm's stacks hold. */
const ROCM_FRAME =
  /libamdhip64|[/\\]opt[/\\]rocm|\+rocm\d|\bhip(Malloc|Free|MemCreate|MemMap|MemSetAccess|StreamSynchronize)\b|c10::hip::|HIPCachingAllocator|libhsa-runtime64|librocm/;
/** Handles below this are small enumerations (CUDA's cudaStreamLegacy 1, cudaStreamPerThread 2), not pointers. */
const POINTER_FLOOR = 0x10000;

/** The vendor that `snapshot` was most likely recorded on, and the evidence. */
export function detectVendor(snapshot: MemorySnapshot): VendorGuess {
  const frames = frameEvidence(snapshot);
  if (frames !== undefined) return frames;
  const settings = settingsEvidence(snapshot);
  if (settings !== undefined) return settings;
  return shapeEvidence(snapshot);
}

/** `vendor` as --vendor gives it, with what the file itself suggests kept as evidence. */
export function vendorFromOption(vendor: SnapshotVendor, snapshot: MemorySnapshot): VendorGuess {
  const guess = detectVendor(snapshot);
  const said = `--vendor ${vendor}`;
  if (guess.vendor === vendor) return { vendor, basis: 'option', evidence: [said, ...guess.evidence] };
  return {
    vendor,
    basis: 'option',
    evidence: [said, `the file alone suggests ${guess.vendor}: ${guess.evidence[0]}`],
  };
}

/** Reads --vendor's value; undefined when it is not one of the three. */
export function parseVendor(text: string): SnapshotVendor | undefined {
  const v = text.trim().toLowerCase();
  return (SNAPSHOT_VENDORS as readonly string[]).includes(v) ? (v as SnapshotVendor) : undefined;
}

function frameEvidence(snapshot: MemorySnapshot): VendorGuess | undefined {
  let npu: string | undefined;
  let rocm: string | undefined;
  for (const f of snapshot.frames) {
    if (npu === undefined && (NPU_FRAME.test(f.filename) || NPU_FRAME.test(f.name))) npu = frameText(f);
    if (rocm === undefined && (ROCM_FRAME.test(f.filename) || ROCM_FRAME.test(f.name))) rocm = frameText(f);
    if (npu !== undefined && rocm !== undefined) break;
  }
  if (npu !== undefined)
    return { vendor: 'npu', basis: 'frames', evidence: [`a frame in torch_npu (${npu})`] };
  if (rocm !== undefined)
    return { vendor: 'rocm', basis: 'frames', evidence: [`a frame in ROCm's HIP (${rocm})`] };
  return undefined;
}

function settingsEvidence(snapshot: MemorySnapshot): VendorGuess | undefined {
  const settings = snapshot.allocatorSettings;
  if (settings === undefined || settings === null) return undefined;
  if ('PYTORCH_NPU_ALLOC_CONF' in settings)
    return {
      vendor: 'npu',
      basis: 'settings',
      evidence: ['allocator_settings names PYTORCH_NPU_ALLOC_CONF'],
    };
  if ('PYTORCH_HIP_ALLOC_CONF' in settings)
    return {
      vendor: 'rocm',
      basis: 'settings',
      evidence: ['allocator_settings names PYTORCH_HIP_ALLOC_CONF'],
    };
  return undefined;
}

function shapeEvidence(snapshot: MemorySnapshot): VendorGuess {
  let events = 0;
  let onZero = 0;
  let small = 0;
  let timed = 0;
  let example = 0;
  for (const t of snapshot.traces) {
    for (let i = 0; i < t.length; i++) {
      const s = t.stream[i];
      events++;
      if (s === 0) onZero++;
      else if (Math.abs(s) < POINTER_FLOOR) small++;
      else if (example === 0) example = s;
      if (!Number.isNaN(t.timeUs[i])) timed++;
    }
  }
  for (const seg of snapshot.segments) {
    if (seg.stream === 0) onZero++;
    else if (Math.abs(seg.stream) < POINTER_FLOOR) small++;
  }
  if (events > 0 && onZero === 0 && small === 0 && timed === 0)
    return {
      vendor: 'npu',
      basis: 'shape',
      evidence: [
        `every stream is a pointer-like handle (e.g. ${example}), none the default stream 0`,
        `no event has time_us (${events} events)`,
      ],
    };
  const why =
    events === 0
      ? 'no trace events and no frames to tell by'
      : onZero > 0
        ? `${onZero} events or segments on stream 0 (CUDA's and ROCm's default stream), no torch_npu or HIP frame`
        : 'no torch_npu or HIP frame';
  return { vendor: 'cuda', basis: 'default', evidence: [`taken for CUDA: ${why}`] };
}

function frameText(f: { readonly filename: string; readonly name: string }): string {
  const file = f.filename.split(/[/\\]/).slice(-3).join('/');
  return f.name.length > 0 ? `${f.name} in ${file}` : file;
}
