/**
 * What a conformance case is made of: its record (steps, codes, values), its
 * environment, and Trace, which records calls and undoes what the case made.
 */
import {
  CU_MEM_ALLOCATION_TYPE_PINNED,
  CU_MEM_HANDLE_TYPE_NONE,
  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
  CU_MEM_LOCATION_TYPE_DEVICE,
  type CUmemAccessDesc,
  type CUmemAllocationProp,
  type CudaApi,
  CU_MEM_ACCESS_FLAGS_PROT_READWRITE as RW,
} from '../api.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface Step {
  op: string;
  code?: number;
  value?: Json;
}

export interface CaseRecord {
  steps: Step[];
  /** Set by the recorder: cuCtxSynchronize's code after the case when it was not 0. */
  contextAfter?: number;
  /** Set by the recorder: the case ended the process (signal or exit code), or threw in JS. */
  crashed?: string;
  threw?: string;
}

export interface CaseEnv {
  /** The device ordinal the cases use. */
  dev: number;
  deviceCount: number;
  /** Minimum granularity of a device allocation (2 MiB on the H200). */
  gran: number;
  totalMem: number;
  /** Close a file descriptor returned by cuMemExportToShareableHandle (a real fd, or the simulator's). */
  closeFd?(fd: number): void;
}

export type CaseFn = (cu: CudaApi, env: CaseEnv) => CaseRecord;

export interface CaseInfo {
  run: CaseFn;
  /** See Note [Cases that may poison the context]. */
  mayPoison: boolean;
}

export const hex = (b: Uint8Array): string =>
  Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

/** A deterministic byte pattern. */
export function pattern(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 7 + 1) & 255;
  return b;
}

interface Deferred {
  key: string;
  op: string;
  fn: () => number;
  done: boolean;
}

/** Records one case's calls and undoes what it made. */
export class Trace {
  readonly steps: Step[] = [];
  private readonly deferred: Deferred[] = [];
  readonly G: number;
  readonly g: bigint;

  constructor(
    readonly cu: CudaApi,
    readonly env: CaseEnv,
  ) {
    this.G = env.gran;
    this.g = BigInt(env.gran);
  }

  call(op: string, code: number, value?: Json): number {
    this.steps.push(value === undefined ? { op, code } : { op, code, value });
    return code;
  }
  see(op: string, value: Json): void {
    this.steps.push({ op, value });
  }

  private defer(key: string, op: string, fn: () => number): void {
    this.deferred.push({ key, op, fn, done: false });
  }
  private settle(key: string): void {
    for (let i = this.deferred.length - 1; i >= 0; i--) {
      const d = this.deferred[i]!;
      if (!d.done && d.key === key) {
        d.done = true;
        return;
      }
    }
  }
  cleanup(): void {
    for (let i = this.deferred.length - 1; i >= 0; i--) {
      const d = this.deferred[i]!;
      if (d.done) continue;
      d.done = true;
      this.call(`cleanup:${d.op}`, d.fn());
    }
  }

  prop(over: Partial<CUmemAllocationProp> = {}): CUmemAllocationProp {
    return {
      type: CU_MEM_ALLOCATION_TYPE_PINNED,
      requestedHandleTypes: CU_MEM_HANDLE_TYPE_NONE,
      location: { type: CU_MEM_LOCATION_TYPE_DEVICE, id: this.env.dev },
      ...over,
    };
  }
  desc(flags: number, id = this.env.dev, type = CU_MEM_LOCATION_TYPE_DEVICE): CUmemAccessDesc {
    return { location: { type, id }, flags };
  }

  gran(label: string, prop: CUmemAllocationProp, option: number): number {
    const box = { value: -1 };
    const code = this.cu.cuMemGetAllocationGranularity(box, prop, option);
    return this.call(label, code, code === 0 ? box.value : undefined);
  }

  /** Reserve; returns the base (0n on failure) and frees it at cleanup. */
  reserve(
    size: number | bigint,
    align: number | bigint = 0,
    addr: bigint = 0n,
    flags = 0,
    label = 'reserve',
  ): bigint {
    const box = { value: 0n };
    const code = this.call(label, this.cu.cuMemAddressReserve(box, size, align, addr, flags));
    if (code !== 0) return 0n;
    const ptr = box.value;
    this.defer(`free:${ptr}`, 'cuMemAddressFree', () => this.cu.cuMemAddressFree(ptr, size));
    return ptr;
  }
  free(ptr: bigint, size: number | bigint, label = 'cuMemAddressFree'): number {
    const code = this.call(label, this.cu.cuMemAddressFree(ptr, size));
    if (code === 0) this.settle(`free:${ptr}`);
    return code;
  }

  /** Create; returns the handle (0n on failure) and releases it at cleanup. */
  create(
    size: number | bigint,
    prop: CUmemAllocationProp = this.prop(),
    flags = 0,
    label = 'create',
  ): bigint {
    const box = { value: 0n };
    const code = this.call(label, this.cu.cuMemCreate(box, size, prop, flags));
    if (code !== 0) return 0n;
    const h = box.value;
    this.defer(`release:${h}`, 'cuMemRelease', () => this.cu.cuMemRelease(h));
    return h;
  }
  release(h: bigint, label = 'cuMemRelease'): number {
    const code = this.call(label, this.cu.cuMemRelease(h));
    if (code === 0) this.settle(`release:${h}`);
    return code;
  }
  /** Take over the release of a handle obtained otherwise (retain, import). */
  owns(h: bigint): void {
    this.defer(`release:${h}`, 'cuMemRelease', () => this.cu.cuMemRelease(h));
  }
  /** Undo something at cleanup (recorded as `cleanup:<op>`), for objects the helpers here do not make. */
  later(op: string, fn: () => number): void {
    this.defer(`later:${op}:${this.deferred.length}`, op, fn);
  }

  map(
    ptr: bigint,
    size: number | bigint,
    h: bigint,
    label = 'map',
    offset: number | bigint = 0,
    flags = 0,
  ): number {
    const code = this.call(label, this.cu.cuMemMap(ptr, size, offset, h, flags));
    if (code === 0) this.defer(`unmap:${ptr}:${size}`, 'cuMemUnmap', () => this.cu.cuMemUnmap(ptr, size));
    return code;
  }
  unmap(ptr: bigint, size: number | bigint, label = 'cuMemUnmap'): number {
    const code = this.call(label, this.cu.cuMemUnmap(ptr, size));
    if (code === 0) this.settle(`unmap:${ptr}:${size}`);
    return code;
  }
  access(ptr: bigint, size: number | bigint, flags: number, label = 'setAccess'): number {
    return this.call(label, this.cu.cuMemSetAccess(ptr, size, [this.desc(flags)], 1));
  }
  setAccess(
    ptr: bigint,
    size: number | bigint,
    descs: CUmemAccessDesc[],
    count: number,
    label: string,
  ): number {
    return this.call(label, this.cu.cuMemSetAccess(ptr, size, descs, count));
  }
  getAccess(ptr: bigint, label = 'getAccess', id = this.env.dev, type = CU_MEM_LOCATION_TYPE_DEVICE): number {
    const box = { value: -1 };
    const code = this.cu.cuMemGetAccess(box, { type, id }, ptr);
    return this.call(label, code, code === 0 ? box.value : undefined);
  }

  /** A full reserve + create + map (+ access) of `size` bytes; returns base and handle. */
  mapped(size: number, access: number | null = RW, prop?: CUmemAllocationProp): { base: bigint; h: bigint } {
    const base = this.reserve(size);
    const h = this.create(size, prop ?? this.prop());
    if (base && h) {
      this.map(base, size, h);
      if (access !== null) this.access(base, size, access);
    }
    return { base, h };
  }

  write(ptr: bigint, bytes: Uint8Array, label = 'HtoD'): number {
    return this.call(label, this.cu.cuMemcpyHtoD(ptr, bytes, bytes.length));
  }
  /** Read n bytes; records their hex when the copy succeeds. */
  read(ptr: bigint, n: number, label = 'DtoH'): string | null {
    const buf = new Uint8Array(n);
    const code = this.cu.cuMemcpyDtoH(buf, ptr, n);
    this.call(label, code, code === 0 ? hex(buf) : undefined);
    return code === 0 ? hex(buf) : null;
  }
  /** Read n bytes and record only whether they equal `expected`. */
  readEquals(ptr: bigint, expected: Uint8Array, label = 'DtoH'): void {
    const buf = new Uint8Array(expected.length);
    const code = this.cu.cuMemcpyDtoH(buf, ptr, expected.length);
    this.call(label, code, code === 0 ? hex(buf) === hex(expected) : undefined);
  }
  props(h: bigint, label = 'getProperties'): number {
    const box: { value: CUmemAllocationProp | null } = { value: null };
    const code = this.cu.cuMemGetAllocationPropertiesFromHandle(box as { value: CUmemAllocationProp }, h);
    let value: Json | undefined;
    if (code === 0 && box.value) {
      const p = box.value;
      value = {
        type: p.type,
        requestedHandleTypes: p.requestedHandleTypes,
        location: { type: p.location.type, id: p.location.id },
        allocFlags: {
          compressionType: p.allocFlags?.compressionType ?? 0,
          gpuDirectRDMACapable: p.allocFlags?.gpuDirectRDMACapable ?? 0,
          usage: p.allocFlags?.usage ?? 0,
        },
      };
    }
    return this.call(label, code, value);
  }
  retain(ptr: bigint, label = 'retain'): bigint {
    const box = { value: 0n };
    const code = this.call(label, this.cu.cuMemRetainAllocationHandle(box, ptr));
    if (code !== 0) return 0n;
    this.owns(box.value);
    return box.value;
  }
  exportFd(h: bigint, label = 'export', type = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, flags = 0): number {
    const box = { value: -1 };
    const code = this.cu.cuMemExportToShareableHandle(box, h, type, flags);
    this.call(label, code, code === 0 ? box.value >= 0 : undefined);
    if (code !== 0) return -1;
    const fd = box.value;
    if (type === CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR && this.env.closeFd) {
      const close = this.env.closeFd;
      this.defer(`close:${fd}`, 'close', () => {
        close(fd);
        return 0;
      });
    }
    return fd;
  }
  importFd(fd: number, label = 'import', type = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR): bigint {
    const box = { value: 0n };
    const code = this.call(label, this.cu.cuMemImportFromShareableHandle(box, fd, type));
    if (code !== 0) return 0n;
    this.owns(box.value);
    return box.value;
  }
  memInfo(): { free: number; total: number } | null {
    const f = { value: 0 };
    const t = { value: 0 };
    return this.cu.cuMemGetInfo(f, t) === 0 ? { free: f.value, total: t.value } : null;
  }
  stream(label = 'cuStreamCreate'): bigint {
    const box = { value: 0n };
    const code = this.call(label, this.cu.cuStreamCreate(box, 0));
    if (code !== 0) return 0n;
    const s = box.value;
    this.defer(`stream:${s}`, 'cuStreamDestroy', () => this.cu.cuStreamDestroy(s));
    return s;
  }
  /** Each code's cuGetErrorName and cuGetErrorString, recorded as name<code> and string<code>. */
  errorTexts(codes: Iterable<number>): void {
    for (const code of codes) {
      const n = { value: '' };
      const c1 = this.cu.cuGetErrorName(code, n);
      this.call(`name${code}`, c1, c1 === 0 ? n.value : undefined);
      const s = { value: '' };
      const c2 = this.cu.cuGetErrorString(code, s);
      this.call(`string${code}`, c2, c2 === 0 ? s.value : undefined);
    }
  }
  /** A device address that is certainly not reserved: a reservation made and freed at once. */
  unreserved(size: number): bigint {
    const box = { value: 0n };
    if (this.cu.cuMemAddressReserve(box, size, 0, 0, 0) !== 0) return 0n;
    this.cu.cuMemAddressFree(box.value, size);
    return box.value;
  }
  /** Two adjacent mappings of different handles, each `each` bytes, both read-write. */
  twoAdjacent(each: number, access: number | null = RW): { base: bigint; h1: bigint; h2: bigint } {
    const base = this.reserve(2 * each);
    const h1 = this.create(each, this.prop(), 0, 'create1');
    const h2 = this.create(each, this.prop(), 0, 'create2');
    if (base && h1 && h2) {
      this.map(base, each, h1, 'map1');
      this.map(base + BigInt(each), each, h2, 'map2');
      if (access !== null) this.access(base, 2 * each, access);
    }
    return { base, h1, h2 };
  }
}

/** Registers a case: its name, its body and whether it may poison the context. */
export type Define = (name: string, body: (t: Trace) => void, mayPoison?: boolean) => void;
