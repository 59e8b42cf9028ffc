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
 * - `workspace_snapshot` entries, which only torch_npu writes (Note
 *   [Workspace entries]), decide before the frames.
 * - device names: neither PyTorch's nor torch_npu's snapshot records one
 *   (a segment has only its device index), so there are none to read.
 * Without frames or settings, pointer-like streams and no time_us
 * together say NPU; anything else is taken for CUDA, and the evidence says
 * it was the default. `--vendor` overrides the guess.
 */
import { DEFAULT_NPU_ALLOCATOR_SETTINGS, parseNpuAllocConf } from '../../alloc/pytorch/npu-alloc-conf.js';
import { DEFAULT_NPU_SETTINGS } from '../../alloc/pytorch/npu-rules.js';
import { type PytorchAllocatorSettings, settingsFromSnapshot } from '../../alloc/pytorch/settings.js';
import { Action, type MemorySnapshot } from './snapshot.js';

export type SnapshotVendor = 'cuda' | 'rocm' | 'npu';

export const SNAPSHOT_VENDORS: readonly SnapshotVendor[] = ['cuda', 'rocm', 'npu'];

/** The vendor a snapshot is taken for and why, in short phrases a person reads. */
export interface VendorGuess {
  readonly vendor: SnapshotVendor;
  /** What decided it, strongest first; empty never (the default says so). */
  readonly evidence: readonly string[];
  /** 'frames', 'workspace' (torch_npu's workspace entries) and 'settings' are read from the file; 'shape' from streams and time_us; 'default' is CUDA for want of any; 'option' is --vendor. */
  readonly basis: 'frames' | 'workspace' | 'settings' | 'shape' | 'default' | 'option';
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
  // Only torch_npu writes workspace_snapshot entries (Note [Workspace entries]).
  if (snapshot.workspace !== undefined)
    return {
      vendor: 'npu',
      basis: 'workspace',
      evidence: [
        `${snapshot.workspace.blocks} workspace_snapshot entries (torch_npu's workspace allocator, ${snapshot.workspace.bytes} bytes, left out of the replay)`,
      ],
    };
  const frames = frameEvidence(snapshot);
  if (frames !== undefined) return frames;
  const settings = settingsEvidence(snapshot);
  if (settings !== undefined) return settings;
  return shapeEvidence(snapshot);
}

/** The vendor a snapshot is replayed as: the one it was given (--vendor), else the guess. */
export function vendorOf(snapshot: MemorySnapshot): SnapshotVendor {
  return snapshot.vendor ?? detectVendor(snapshot).vendor;
}

/** The guess with its evidence, or the vendor given with what the file suggests. */
export function vendorGuessOf(snapshot: MemorySnapshot): VendorGuess {
  return snapshot.vendor === undefined ? detectVendor(snapshot) : vendorFromOption(snapshot.vendor, snapshot);
}

/**
 * The allocator settings a snapshot records, for its vendor's allocator: a
 * torch_npu snapshot records none (Note [Snapshot vendor]), so it gets
 * torch_npu's defaults and rules (Note [torch_npu's allocator]); a CUDA or
 * ROCm one its allocator_settings as settingsFromSnapshot reads them (ROCm's
 * allocator is PyTorch's, hipified). Throws AllocatorSettingsError.
 */
export function settingsOfSnapshot(snapshot: MemorySnapshot): PytorchAllocatorSettings {
  const settings = settingsFromSnapshot(snapshot.allocatorSettings);
  if (vendorOf(snapshot) !== 'npu') return settings;
  if (snapshot.allocatorSettings === undefined || snapshot.allocatorSettings === null)
    return DEFAULT_NPU_ALLOCATOR_SETTINGS;
  return { ...settings, npu: DEFAULT_NPU_SETTINGS };
}

/** A configuration string as the snapshot's vendor reads it: PYTORCH_NPU_ALLOC_CONF on torch_npu. */
export function settingsOfConf(
  snapshot: MemorySnapshot,
  conf: string,
  parseCuda: (conf: string) => PytorchAllocatorSettings,
): PytorchAllocatorSettings {
  return vendorOf(snapshot) === 'npu' ? parseNpuAllocConf(conf).settings : parseCuda(conf);
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
  // Snapshots made by hand (tests, callers of the library) may leave out what they do not use.
  for (const f of snapshot.frames ?? []) {
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
  for (const t of snapshot.traces ?? []) {
    for (let i = 0; i < t.length; i++) {
      const s = t.stream[i];
      events++;
      if (s === 0) onZero++;
      else if (Math.abs(s) < POINTER_FLOOR) small++;
      else if (example === 0) example = s;
      if (!Number.isNaN(t.timeUs[i])) timed++;
    }
  }
  for (const seg of snapshot.segments ?? []) {
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

/*
 * Note [torch_npu's addresses]: ACL hands out device addresses near
 * 0x12C0_0000_0000, below the simulated address space (one-step chunks
 * from 0x6000_0000_0000 up, as the H200's driver places them). Replay puts
 * each recorded segment at its recorded address (Note [Recorded
 * placement]), because best fit breaks ties between equal blocks by
 * address; an address outside the simulated space is not honoured, the
 * segment lands where the simulator chooses, and ties break otherwise (the
 * torch_npu fixture memsnapdump-empty-cache peaked 2 MiB low so). So a
 * torch_npu snapshot whose addresses lie below that space is moved up by a
 * whole number of GiB, every address alike (trace entries, segments, blocks):
 * order, offsets and alignment stay, which is all the allocator can see.
 * The move is made when a replay is planned; what the snapshot says is not
 * changed. CUDA snapshots are left alone: their low addresses are the
 * driver's own chunks (0x302000000 up on the H200), which the simulator
 * models as it models them.
 */
const SIMULATED_SPACE_START = 0x6000_0000_0000;
const SIMULATED_SPACE_TARGET = 0x6800_0000_0000;
const SIMULATED_SPACE_END = 0x7000_0000_0000;
const GiB = 2 ** 30;

/** The snapshot with its addresses moved into the simulated address space, where they lie below it (Note [torch_npu's addresses]). */
export function inSimulatedAddressSpace(snapshot: MemorySnapshot): MemorySnapshot {
  if (vendorOf(snapshot) !== 'npu') return snapshot;
  let low = Number.POSITIVE_INFINITY;
  let high = 0;
  const see = (a: number, size: number) => {
    if (a <= 0) return;
    if (a < low) low = a;
    if (a + size > high) high = a + size;
  };
  for (const t of snapshot.traces)
    for (let i = 0; i < t.length; i++) if (movable(t.action[i])) see(t.addr[i], t.size[i]);
  for (const s of snapshot.segments) see(s.address, s.totalSize);
  if (!(low < SIMULATED_SPACE_START)) return snapshot;
  const shift = SIMULATED_SPACE_TARGET - Math.floor(low / GiB) * GiB;
  if (high + shift > SIMULATED_SPACE_END) return snapshot;
  const traces = snapshot.traces.map((t) => {
    const addr = Float64Array.from(t.addr);
    for (let i = 0; i < t.length; i++) if (movable(t.action[i]) && addr[i] > 0) addr[i] += shift;
    return { ...t, addr };
  });
  const segments = snapshot.segments.map((s) => ({
    ...s,
    address: s.address + shift,
    blocks: s.blocks.map((b) => ({ ...b, address: b.address + shift })),
  }));
  return { ...snapshot, traces, segments };
}

/** Whether an event's addr is an address (an oom's is the device's free bytes, a snapshot marker's nothing). */
function movable(action: number): boolean {
  return action !== Action.oom && action !== Action.snapshot;
}

/** What each vendor is called in an answer's first lines. */
export const VENDOR_NAMES: Readonly<Record<SnapshotVendor, string>> = {
  cuda: 'CUDA (PyTorch on an NVIDIA GPU)',
  rocm: 'ROCm (PyTorch on an AMD GPU)',
  npu: 'torch_npu (Ascend NPU; its NPUCachingAllocator, docs/npu-allocator.md)',
};

/** The snapshot as --vendor names it (undefined: left to the guess). */
export function withVendor(snapshot: MemorySnapshot, vendor: SnapshotVendor | undefined): MemorySnapshot {
  return vendor === undefined || snapshot.vendor === vendor ? snapshot : { ...snapshot, vendor };
}

/** The line that says which machine made the snapshot, and why. */
export function vendorLine(guess: VendorGuess): string {
  return `made on: ${VENDOR_NAMES[guess.vendor]}; ${guess.evidence.join('; ')}`;
}

/**
 * The vendor line where it tells something: a snapshot from ROCm or
 * torch_npu, or a vendor given with --vendor. A CUDA snapshot taken for CUDA
 * for want of other evidence says so only in JSON (`vendor`,
 * `vendorEvidence`), so CUDA answers read as before.
 */
export function vendorLines(guess: VendorGuess): string[] {
  return guess.vendor === 'cuda' && guess.basis === 'default' ? [] : [vendorLine(guess)];
}

/** The configuration variable a vendor's users set. */
export function allocConfName(vendor: SnapshotVendor): string {
  return vendor === 'npu' ? 'PYTORCH_NPU_ALLOC_CONF' : 'PYTORCH_CUDA_ALLOC_CONF';
}

/** Whose caching allocator a vendor's snapshots come from, in words: torch_npu's, or PyTorch's. */
export function allocatorOwner(vendor: SnapshotVendor): 'torch_npu' | 'PyTorch' {
  return vendor === 'npu' ? 'torch_npu' : 'PyTorch';
}
