import { isVmmError } from '../../core/errors.js';
import type { Mapping, PhysicalAllocation, Reservation } from '../../core/objects.js';
import type { AccessDescriptor } from '../../core/runtime.js';
import { instrument } from '../../core/trace.js';
import { Access, HandleType, type Location } from '../../core/types.js';
import { isMultipleOf } from '../../util/integers.js';
import {
  ACCESS_DESC_SHAPE,
  type Box,
  hostBytes,
  isBox,
  isHostBuffer,
  isStruct,
  LOCATION_SHAPE,
  probeBox,
  readArrayLike,
  readList,
  readStruct,
  type Size,
  type StructShape,
  show,
  toCount,
  toInt,
  writeBox,
  writeBoxes,
} from '../common/args.js';
import { type FlavorOptions, VendorProcess, withDefaultDevices } from '../common/process.js';
import * as C from './constants.js';
import { ACL_ERROR_TABLE, ACL_UNKNOWN_ERROR } from './error-table.js';
import { aclLayers } from './layers.js';

/** aclrtMemLocation */
export interface aclrtMemLocation {
  id: number;
  type: number;
}

/** aclrtPhysicalMemProp */
export interface aclrtPhysicalMemProp {
  handleType: number;
  allocationType: number;
  memAttr: number;
  location: aclrtMemLocation;
  reserve?: bigint | number;
}

/** aclrtMemAccessDesc (rsv is accepted and ignored, as the documentation asks for zeros). */
export interface aclrtMemAccessDesc {
  flags: number;
  location: aclrtMemLocation;
  rsv?: ArrayLike<number>;
}

/** void* on the device side, aclrtDrvMemHandle, aclrtStream: opaque pointers, 0 for NULL. */
type Pointer = bigint | number | null | undefined;
/**
 * Note [ACL events]
 * Events are core's (Note [Events] in src/backend/backend.ts), with the CANN
 * documentation's rules in front. aclrtQueryEventStatus reports
 * ACL_EVENT_RECORDED_STATUS_COMPLETE once the recorded work has run and
 * NOT_READY otherwise, which by the documentation includes an event never
 * recorded (CUDA and HIP call that complete). An event of
 * aclrtCreateEventWithFlag without ACL_EVENT_SYNC may not be waited on or
 * reset (the documentation says so; the code it answers is not documented:
 * ACL_ERROR_RT_FEATURE_NOT_SUPPORT here is our choice). aclrtResetEvent
 * takes effect at once rather than in its stream's order: the event reads
 * as never recorded from then on. NULL arguments answer
 * ACL_ERROR_INVALID_PARAM, an unknown event or stream
 * ACL_ERROR_RT_PARAM_INVALID, a stream of another device
 * ACL_ERROR_RT_STREAM_CONTEXT (our choice of code, unverified).
 */

/** What aclrtMemcpy's void* dst / const void* src can be here: a device address or a host buffer. */
type MemcpyPointer = Pointer | Uint8Array;

/** The function names of the ACL flavour (for tracing, parity and documentation). */
export const ACL_FUNCTIONS = [
  'aclInit',
  'aclFinalize',
  'aclrtSetDevice',
  'aclrtGetDeviceCount',
  'aclrtGetDevice',
  'aclrtResetDevice',
  'aclrtReserveMemAddress',
  'aclrtReleaseMemAddress',
  'aclrtMallocPhysical',
  'aclrtFreePhysical',
  'aclrtMapMem',
  'aclrtMemMapNoAccess',
  'aclrtUnmapMem',
  'aclrtMemSetAccess',
  'aclrtMemGetAccess',
  'aclrtMemRetainAllocationHandle',
  'aclrtMemGetAllocationGranularity',
  'aclrtMemGetAllocationPropertiesFromHandle',
  'aclrtMemExportToShareableHandle',
  'aclrtMemSetPidToShareableHandle',
  'aclrtMemImportFromShareableHandle',
  'aclrtDeviceGetBareTgid',
  'aclrtMalloc',
  'aclrtFree',
  'aclrtMemcpy',
  'aclrtMemcpyAsync',
  'aclrtMemset',
  'aclrtMemsetAsync',
  'aclrtCreateStream',
  'aclrtSynchronizeStream',
  'aclrtDestroyStream',
  'aclrtSynchronizeDevice',
  'aclrtCreateEvent',
  'aclrtCreateEventWithFlag',
  'aclrtRecordEvent',
  'aclrtQueryEventStatus',
  'aclrtSynchronizeEvent',
  'aclrtStreamWaitEvent',
  'aclrtResetEvent',
  'aclrtDestroyEvent',
  'aclrtGetMemInfo',
  'aclrtMallocHost',
  'aclrtFreeHost',
  'aclrtDestroyStreamForce',
  'aclrtResetDeviceForce',
  'aclrtCreateContext',
  'aclrtDestroyContext',
  'aclrtSetCurrentContext',
  'aclrtGetCurrentContext',
  'aclrtDeviceCanAccessPeer',
  'aclrtDeviceEnablePeerAccess',
  'aclrtDeviceDisablePeerAccess',
  'aclrtIpcMemGetExportKey',
  'aclrtIpcMemSetImportPid',
  'aclrtIpcMemImportByKey',
  'aclrtIpcMemClose',
  'aclrtMemExportToShareableHandleV2',
  'aclrtMemSetPidToShareableHandleV2',
  'aclrtMemImportFromShareableHandleV2',
  'aclGetRecentErrMsg',
] as const;

/** aclrtPhysicalMemProp's fields, for the one read of a caller's struct. */
const PHYSICAL_MEM_PROP_SHAPE: StructShape = [
  'handleType',
  'allocationType',
  'memAttr',
  ['location', LOCATION_SHAPE],
  'reserve',
];

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/** Stream handles are opaque; these are deterministic per process. */
const STREAM_BASE = 0xa5_0000n;
/** aclrtEvent handles: opaque, never reused in a process. */
const ACL_EVENT_BASE = 0xae_0000_0000n;
const ACL_EVENT_FLAG_BITS = C.ACL_EVENT_SYNC | C.ACL_EVENT_CAPTURE_STREAM_PROGRESS | C.ACL_EVENT_TIME_LINE;
/** What aclrtCreateEvent's events can do: everything (stream waits and resets included). */
const ACL_EVENT_DEFAULT_FLAGS = ACL_EVENT_FLAG_BITS;
/** aclrtContext handles: each device's default context, then those aclrtCreateContext makes. */
const DEFAULT_CONTEXT_BASE = 0xc7_0000n;
const CONTEXT_BASE = 0xc8_0000n;
/** The simulated machine of an ACL process that names none. */
const ACL_DEFAULT_DEVICES = ['Ascend910B'] as const;

/** Attributes CANN's aclrtMallocPhysical knows (memAttrHandlers); others answer ACL_ERROR_INVALID_PARAM. */
const KNOWN_MEM_ATTRS = new Set([
  C.ACL_DDR_MEM_HUGE,
  C.ACL_DDR_MEM_NORMAL,
  C.ACL_HBM_MEM_HUGE,
  C.ACL_HBM_MEM_NORMAL,
  C.ACL_DDR_MEM_P2P_HUGE,
  C.ACL_DDR_MEM_P2P_NORMAL,
  C.ACL_HBM_MEM_P2P_HUGE,
  C.ACL_HBM_MEM_P2P_NORMAL,
  C.ACL_HBM_MEM_HUGE1G,
  C.ACL_HBM_MEM_P2P_HUGE1G,
  C.ACL_MEM_NORMAL,
  C.ACL_MEM_HUGE,
  C.ACL_MEM_HUGE1G,
  C.ACL_MEM_P2P_NORMAL,
  C.ACL_MEM_P2P_HUGE,
  C.ACL_MEM_P2P_HUGE1G,
]);
/** DDR attributes that CANN accepts only for host locations. */
const DDR_MEM_ATTRS = new Set([
  C.ACL_DDR_MEM_HUGE,
  C.ACL_DDR_MEM_NORMAL,
  C.ACL_DDR_MEM_P2P_HUGE,
  C.ACL_DDR_MEM_P2P_NORMAL,
]);
const HUGE1G_MEM_ATTRS = new Set([
  C.ACL_HBM_MEM_HUGE1G,
  C.ACL_HBM_MEM_P2P_HUGE1G,
  C.ACL_MEM_HUGE1G,
  C.ACL_MEM_P2P_HUGE1G,
]);
/** aclrtGetMemInfo's attributes for device HBM (an Ascend 910B has no device DDR). */
const HBM_MEM_ATTRS = new Set([
  C.ACL_HBM_MEM,
  C.ACL_HBM_MEM_HUGE,
  C.ACL_HBM_MEM_NORMAL,
  C.ACL_HBM_MEM_P2P_HUGE,
  C.ACL_HBM_MEM_P2P_NORMAL,
  C.ACL_HBM_MEM_HUGE1G,
  C.ACL_HBM_MEM_P2P_HUGE1G,
]);

/** Options of createAcl: as every flavour's, with one Ascend 910B as the default machine. */
export type AclOptions = FlavorOptions;

/**
 * One process using Ascend's ACL runtime: every method has the C name and
 * argument order and returns the aclError. ACL's own argument checks (null
 * pointers, zero sizes, reserved flags) come first and answer
 * ACL_ERROR_INVALID_PARAM, as CANN's acl layer does before it calls the
 * runtime; the runtime's rules follow with its 107xxx / 207xxx codes; the
 * work is done by core.
 *
 * Note [ACL's size-less calls]: aclrtUnmapMem(virPtr) and
 * aclrtReleaseMemAddress(virPtr) take no size. The flavour looks the size up
 * in core (mappingAt / reservationAt) and requires virPtr to be exactly the
 * start of what aclrtMapMem / aclrtReserveMemAddress returned.
 */
export class AclFlavor extends VendorProcess {
  #initialized = false;
  /** Set by dispose(): the process is gone (Note [ACL after dispose]). */
  #gone = false;
  /** aclrtSetDevice count per device ordinal (aclrtResetDevice undoes one). */
  readonly #deviceRefs: number[];
  /** The calling thread's current device, or -1. */
  #current = -1;
  /** Stream handle -> [core stream id, device]. */
  readonly #streams = new Map<bigint, { id: number; device: number }>();
  /** Live events by core id: creation flags, and whether recorded since creation or reset (aclrtQueryEventStatus). */
  readonly #events = new Map<number, { readonly flags: number; recorded: boolean }>();
  #nextStream = 1n;
  /** memAttr given at aclrtMallocPhysical, for aclrtMemGetAllocationPropertiesFromHandle. */
  readonly #memAttrs = new WeakMap<PhysicalAllocation, number>();
  /** What each reservation's mappings hold, while it has any (Note [ACL reservation holdings]). */
  readonly #holdings = new WeakMap<Reservation, Holding>();
  /** Contexts aclrtCreateContext made -> their device. */
  readonly #contexts = new Map<bigint, number>();
  #nextContext = 1n;
  /** The calling thread's current context (0n: none); a device's default one after aclrtSetDevice. */
  #context = 0n;
  /** "current>peer" pairs aclrtDeviceEnablePeerAccess enabled (Note [ACL peer access]). */
  readonly #peers = new Set<string>();
  /** Buffers aclrtMallocHost handed out and aclrtFreeHost has not taken back. */
  readonly #hostBuffers = new WeakSet<Uint8Array>();
  /** Mappings the host was granted READWRITE on (Note [ACL host access]). */
  readonly #hostAccess = new WeakSet<Mapping>();
  /** Shareable handles this process exported (import of one's own export is refused). */
  readonly #exported = new Set<number>();
  /** IPC keys this process exported and has not closed: each one's token and aclrtMalloc address. */
  readonly #ipcExports = new Map<
    string,
    { readonly token: number; readonly va: number; readonly checkPid: boolean }
  >();
  /** IPC keys this process imported: the address of each import not yet closed, oldest first. */
  readonly #ipcImports = new Map<string, number[]>();
  /** The failure aclGetRecentErrMsg reports (and clears); per process, never module state. */
  #recentError: string | null = null;
  /** Why the current call failed, when a check or core said so. */
  #reason: string | undefined;

  constructor(options: AclOptions = {}) {
    super(withDefaultDevices(options, ACL_DEFAULT_DEVICES), {
      vendor: 'ACL',
      table: ACL_ERROR_TABLE,
      success: C.ACL_SUCCESS,
      unknown: ACL_UNKNOWN_ERROR,
    });
    this.#deviceRefs = this.runtime.devices.map(() => 0);
    this.#recordFailures();
    if (options.tracer)
      instrument(
        this,
        'flavor',
        options.tracer,
        [...ACL_FUNCTIONS, 'dispose'],
        aclLayers(this.runtime.backend.kind),
      );
  }

  /**
   * End the process (Note [ACL after dispose]): everything it holds goes, and
   * every later call answers ACL_ERROR_UNINITIALIZE. Never throws.
   */
  override dispose(): void {
    this.#gone = true;
    this.#initialized = false;
    this.#current = -1;
    super.dispose();
  }

  // --- initialisation and devices ------------------------------------------------------------

  aclInit(configPath?: string | null): number {
    if (this.#gone) return this.#uninitialized();
    if (configPath !== undefined && configPath !== null && typeof configPath !== 'string')
      return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'configPath is not a string');
    if (this.#initialized) return this.#bad(C.ACL_ERROR_REPEAT_INITIALIZE, 'aclInit was already called');
    this.#initialized = true;
    return C.ACL_SUCCESS;
  }

  aclFinalize(): number {
    if (this.#gone) return this.#uninitialized();
    if (!this.#initialized) return this.#bad(C.ACL_ERROR_REPEAT_FINALIZE, 'aclInit was not called');
    // aclFinalize resets every device the process still holds.
    for (let d = 0; d < this.#deviceRefs.length; d++) {
      if (this.#deviceRefs[d] > 0) {
        this.#deviceRefs[d] = 1;
        this.aclrtResetDevice(d);
      }
    }
    this.#contexts.clear();
    this.#context = 0n;
    this.#current = -1;
    this.#initialized = false;
    return C.ACL_SUCCESS;
  }

  aclrtSetDevice(deviceId: number): number {
    if (!this.#initialized) return this.#uninitialized();
    const d = toInt(deviceId);
    if (!this.runtime.isDevice(d))
      return this.#bad(C.ACL_ERROR_RT_INVALID_DEVICEID, `no device ${show(deviceId)}`);
    this.#deviceRefs[d]++;
    this.#current = d;
    this.#context = DEFAULT_CONTEXT_BASE + BigInt(d);
    return C.ACL_SUCCESS;
  }

  /** The device aclrtSetDevice made current; ACL_ERROR_RT_CONTEXT_NULL before one is set. */
  aclrtGetDevice(deviceId: Box<number>): number {
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    if (!isBox(deviceId)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'deviceId is NULL');
    return writeBox(deviceId, this.#current) ? C.ACL_SUCCESS : this.#unwritable();
  }

  aclrtGetDeviceCount(count: Box<number>): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(count)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'count is NULL');
    return writeBox(count, this.runtime.devices.length) ? C.ACL_SUCCESS : this.#unwritable();
  }

  /** Undo one aclrtSetDevice; at the last, the device's streams are destroyed (their work finishes first). */
  aclrtResetDevice(deviceId: number): number {
    if (!this.#initialized) return this.#uninitialized();
    const d = toInt(deviceId);
    if (!this.runtime.isDevice(d))
      return this.#bad(C.ACL_ERROR_RT_INVALID_DEVICEID, `no device ${show(deviceId)}`);
    if (this.#deviceRefs[d] === 0) return C.ACL_SUCCESS;
    if (--this.#deviceRefs[d] > 0) return C.ACL_SUCCESS;
    if (this.#context === DEFAULT_CONTEXT_BASE + BigInt(d)) {
      this.#current = -1;
      this.#context = 0n;
    }
    for (const key of [...this.#peers]) if (key.startsWith(`${d}>`)) this.#peers.delete(key);
    // Every stream of the device goes, even one whose queued work fails when it runs (Note
    // [Destroying a busy stream], cuda.ts): a failure there is the work's, not the reset's.
    for (const [h, s] of [...this.#streams]) {
      if (s.device !== d) continue;
      try {
        this.runtime.destroyStream(s.id);
      } catch (e) {
        if (this.runtime.hasStream(s.id)) this.report('a stream outlived aclrtResetDevice', e);
      }
      this.#streams.delete(h);
    }
    // So do its events (Note [ACL events]).
    for (const id of [...this.#events.keys()]) {
      if (this.runtime.eventDevice(id) !== d) continue;
      this.runtime.quietly(() => this.runtime.destroyEvent(id));
      this.#events.delete(id);
    }
    return C.ACL_SUCCESS;
  }

  // --- virtual addresses ----------------------------------------------------------------------

  /**
   * size only needs to be non-zero: it rounds up to the granularity (Note
   * [ACL reservation sizes]). alignment is reserved (0); flags 0 or 1 (the
   * page-size flag older references define and newer ones call reserved,
   * recommending 0: both are accepted, for compatibility). expectPtr NULL
   * lets the runtime choose; a non-NULL one is taken exactly or the call
   * fails: CANN's reference, runtime and driver all treat it as a fixed
   * address, not a hint (Note [ACL expectPtr]).
   */
  aclrtReserveMemAddress(
    virPtr: Box<bigint>,
    size: Size,
    alignment: Size,
    expectPtr: Pointer,
    flags: Size,
  ): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(virPtr)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'virPtr is NULL');
    const n = toCount(size);
    if (n <= 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, `size ${show(size)} must be positive`);
    const f = toCount(flags);
    if (f !== 0 && f !== 1)
      return this.#bad(C.ACL_ERROR_INVALID_PARAM, `flags ${show(flags)} must be 0 or 1`);
    if (toCount(alignment) !== 0)
      return this.#bad(
        C.ACL_ERROR_RT_PARAM_INVALID,
        `alignment ${show(alignment)} is reserved and must be 0`,
      );
    const g = this.runtime.vaGranularity;
    const rounded = Math.ceil(n / g) * g;
    if (!Number.isSafeInteger(rounded))
      return this.#bad(C.ACL_ERROR_RT_MEMORY_ALLOCATION, `size ${n} is past any address space`);
    const hint = toCount(expectPtr ?? 0);
    const align = hint === 0 ? g : expectPtrAlignment(n, g);
    if (hint < 0 || !isMultipleOf(hint, align))
      return this.#bad(
        C.ACL_ERROR_RT_PARAM_INVALID,
        `expectPtr ${hint < 0 ? show(expectPtr) : `0x${hint.toString(16)}`} is not ${align}-aligned, as a reservation of ${n} bytes needs`,
      );
    return this.#run(() => {
      const r = this.runtime.reserve(rounded, { hint });
      if (hint !== 0 && r.base !== hint) {
        this.runtime.free(r);
        this.#reason = `expectPtr 0x${hint.toString(16)} is not free`;
        throw new AclRefusal(C.ACL_ERROR_RT_PARAM_INVALID);
      }
      if (!writeBox(virPtr, BigInt(r.base))) {
        this.runtime.free(r);
        throw new AclRefusal(this.#unwritable());
      }
    });
  }

  aclrtReleaseMemAddress(virPtr: Pointer): number {
    if (!this.#initialized) return this.#uninitialized();
    const va = toCount(virPtr ?? 0);
    if (va === 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'virPtr is NULL');
    const r = this.runtime.reservationAt(va);
    if (r === undefined || r.origin !== 'vmm')
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `0x${va.toString(16)} is not a reserved address`);
    // CANN: unmap first. Nothing is released while a mapping remains.
    if (r.mappingCount > 0)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `${r.mappingCount} mapping(s) remain in the range`);
    return this.#run(() => this.runtime.free(r));
  }

  // --- physical memory ------------------------------------------------------------------------

  aclrtMallocPhysical(handle: Box<bigint>, size: Size, propArg: aclrtPhysicalMemProp, flags: Size): number {
    if (!this.#initialized) return this.#uninitialized();
    // One read of each field, into a plain copy (Note [Untrusted arguments]).
    const prop = readStruct<aclrtPhysicalMemProp>(propArg, PHYSICAL_MEM_PROP_SHAPE);
    if (!isBox(handle)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'handle is NULL');
    if (prop === undefined) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'prop is NULL or cannot be read');
    const n = toCount(size);
    if (n <= 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, `size ${show(size)} must be positive`);
    if (toCount(flags) !== 0)
      return this.#bad(C.ACL_ERROR_INVALID_PARAM, `flags ${show(flags)} is reserved (0)`);
    const checked = this.#checkProp(prop);
    if (typeof checked === 'number') return checked;
    // CANN's reference words the granularity first as advice (align "to save memory"), then as a
    // rule: the granularity is fixed, "so size currently must be 2M-aligned". The rule is kept:
    // aclrtMapMem must map exactly this size, so a silent round-up would break that call instead.
    const g = this.#granularity(prop.memAttr, checked);
    if (!isMultipleOf(n, g))
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `size ${n} is not a multiple of ${g}`);
    return this.#run(() => {
      // Any device memory may be exported by token (aclrtMemExportToShareableHandle); a token is a
      // POSIX fd underneath over the NVIDIA driver (Note [Token registry]), so it is created exportable.
      const handleTypes = checked.type === 'device' ? HandleType.PosixFd : HandleType.None;
      const a = this.runtime.create(n, { location: checked, handleTypes, uncached: false });
      if (!writeBox(handle, BigInt(a.id))) {
        this.runtime.release(a);
        throw new AclRefusal(this.#unwritable());
      }
      this.#memAttrs.set(a, prop.memAttr);
    });
  }

  /** Drop this handle; memory still mapped lives on until its last aclrtUnmapMem (core's refcount). */
  aclrtFreePhysical(handle: Pointer): number {
    if (!this.#initialized) return this.#uninitialized();
    if (isNull(handle)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'handle is NULL');
    const a = this.#allocation(handle);
    if (a === undefined) return this.#bad(C.ACL_ERROR_RT_INVALID_HANDLE, `no handle ${show(handle)}`);
    return this.#run(() => this.runtime.release(a));
  }

  // --- mapping and access -----------------------------------------------------------------------

  /** Map and grant the memory's own device read-write (Note [ACL map grants access]). */
  aclrtMapMem(virPtr: Pointer, size: Size, offset: Size, handle: Pointer, flags: Size): number {
    return this.#map(virPtr, size, offset, handle, flags, true);
  }

  /**
   * aclrtMapMem without the grant: no device may touch the range until
   * aclrtMemSetAccess. The prototype is taken to be aclrtMapMem's (the
   * reference describes it by contrast with aclrtMapMem; unsure of any
   * further argument rule, so aclrtMapMem's are applied).
   */
  aclrtMemMapNoAccess(virPtr: Pointer, size: Size, offset: Size, handle: Pointer, flags: Size): number {
    return this.#map(virPtr, size, offset, handle, flags, false);
  }

  #map(virPtr: Pointer, size: Size, offset: Size, handle: Pointer, flags: Size, grant: boolean): number {
    if (!this.#initialized) return this.#uninitialized();
    const va = toCount(virPtr ?? 0);
    if (va === 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'virPtr is NULL');
    if (isNull(handle)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'handle is NULL');
    const n = toCount(size);
    if (n <= 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, `size ${show(size)} must be positive`);
    if (toCount(flags) !== 0)
      return this.#bad(C.ACL_ERROR_INVALID_PARAM, `flags ${show(flags)} is reserved (0)`);
    const a = this.#allocation(handle);
    if (a === undefined) return this.#bad(C.ACL_ERROR_RT_INVALID_HANDLE, `no handle ${show(handle)}`);
    if (toCount(offset) !== 0)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `offset ${show(offset)} must be 0`);
    if (n !== a.size)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `size ${n} is not the physical size ${a.size}`);
    const r = this.runtime.reservationContaining(va);
    if (r !== undefined && r.origin !== 'vmm')
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, 'the address belongs to aclrtMalloc');
    // One reservation may not bind handles of two devices, nor mix created and imported handles
    // (Note [ACL reservation holdings]).
    const held = r !== undefined && r.mappingCount > 0 ? this.#holdings.get(r) : undefined;
    if (held !== undefined) {
      if (!sameLocation(held.location, a.props.location))
        return this.#bad(
          C.ACL_ERROR_RT_PARAM_INVALID,
          'the reservation already holds memory of another device',
        );
      if (held.imported !== (a.origin === 'imported'))
        return this.#bad(
          C.ACL_ERROR_RT_PARAM_INVALID,
          'the reservation may not hold both allocated and imported handles',
        );
    }
    return this.#run(() => {
      const m = this.runtime.map(va, n, a, 0);
      const own = a.props.location.type === 'device' ? a.props.location.id : this.#current;
      if (grant && this.runtime.isDevice(own)) {
        try {
          this.runtime.setAccess(va, n, [{ device: own, access: Access.ReadWrite }]);
        } catch (e) {
          // All or nothing: a map whose grant failed is undone.
          this.runtime.unmap(va, n);
          throw e;
        }
      }
      if (held === undefined)
        this.#holdings.set(m.reservation, { location: a.props.location, imported: a.origin === 'imported' });
    });
  }

  aclrtUnmapMem(virPtr: Pointer): number {
    if (!this.#initialized) return this.#uninitialized();
    const va = toCount(virPtr ?? 0);
    if (va === 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'virPtr is NULL');
    const m = this.#mappingStartingAt(va);
    if (m === undefined)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `nothing is mapped at 0x${va.toString(16)}`);
    return this.#run(() => this.runtime.unmap(m.va, m.size));
  }

  /**
   * virPtr and size must be exactly one aclrtMapMem's, flags READWRITE (the
   * only value CANN's aclrtMemAccessDesc documents as supported; NONE and
   * READ answer ACL_ERROR_RT_PARAM_INVALID), locations HOST or DEVICE
   * (Note [ACL host access]).
   */
  aclrtMemSetAccess(virPtr: Pointer, size: Size, desc: readonly aclrtMemAccessDesc[], count: Size): number {
    if (!this.#initialized) return this.#uninitialized();
    const va = toCount(virPtr ?? 0);
    if (va === 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'virPtr is NULL');
    const n = toCount(size);
    if (n <= 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, `size ${show(size)} must be positive`);
    const k = toCount(count);
    // The caller's list read once (Note [Untrusted arguments]).
    const list = readList(desc, Math.max(k, 0));
    if (list === 'not-array') return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'desc is NULL or cannot be read');
    if (k <= 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, `count ${show(count)} must be positive`);
    if (list.length < k) return this.#bad(C.ACL_ERROR_INVALID_PARAM, `desc holds fewer than ${k} entries`);
    const descriptors: AccessDescriptor[] = [];
    let host = false;
    for (let i = 0; i < k; i++) {
      const d = readStruct<aclrtMemAccessDesc>(list[i], ACCESS_DESC_SHAPE);
      if (!isStruct(d) || !isStruct(d.location))
        return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `desc[${i}] cannot be read`);
      if (d.flags !== C.ACL_RT_MEM_ACCESS_FLAGS_READWRITE)
        return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `desc[${i}].flags ${show(d.flags)} must be READWRITE`);
      if (d.location.type === C.ACL_MEM_LOCATION_TYPE_HOST) {
        host = true;
        continue;
      }
      const device = this.#accessDevice(d.location);
      if (device instanceof AclRefusal) return device.code;
      descriptors.push({ device, access: Access.ReadWrite });
    }
    const m = this.#mappingStartingAt(va);
    if (m === undefined)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `nothing is mapped at 0x${va.toString(16)}`);
    if (m.size !== n)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `size ${n} is not the mapped size ${m.size}`);
    return this.#run(() => {
      // Host-located memory: the HOST grant is the CPU's (Note [Host access]), with the devices' in one call.
      const cpu = host && m.allocation.props.location.type === 'host';
      if (cpu || descriptors.length > 0)
        this.runtime.setAccess(va, n, descriptors, cpu ? Access.ReadWrite : undefined);
      if (host) this.#hostAccess.add(m);
    });
  }

  /** The mapping's access from one device, or from the host (Note [ACL host access]). */
  aclrtMemGetAccess(virPtr: Pointer, locationArg: aclrtMemLocation, flag: Box<number>): number {
    if (!this.#initialized) return this.#uninitialized();
    const va = toCount(virPtr ?? 0);
    if (va === 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'virPtr is NULL');
    const location = readStruct<aclrtMemLocation>(locationArg, LOCATION_SHAPE);
    if (location === undefined)
      return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'location is NULL or cannot be read');
    if (!isBox(flag)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'flag is NULL');
    const isHost = location.type === C.ACL_MEM_LOCATION_TYPE_HOST;
    const device = isHost ? -1 : this.#accessDevice(location);
    if (device instanceof AclRefusal) return device.code;
    const m = this.#mappingStartingAt(va);
    if (m === undefined)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `nothing is mapped at 0x${va.toString(16)}`);
    const access = isHost
      ? this.#hostAccess.has(m)
        ? C.ACL_RT_MEM_ACCESS_FLAGS_READWRITE
        : C.ACL_RT_MEM_ACCESS_FLAGS_NONE
      : m.accessOf(device);
    return writeBox(flag, access) ? C.ACL_SUCCESS : this.#unwritable();
  }

  /** A new reference to the handle mapped at any address inside a mapping; undo with aclrtFreePhysical. */
  aclrtMemRetainAllocationHandle(virPtr: Pointer, handle: Box<bigint>): number {
    if (!this.#initialized) return this.#uninitialized();
    const va = toCount(virPtr ?? 0);
    if (va === 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'virPtr is NULL');
    if (!isBox(handle)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'handle is NULL');
    return this.#run(() => {
      const a = this.runtime.retain(va);
      if (!writeBox(handle, BigInt(a.id))) {
        this.runtime.release(a);
        throw new AclRefusal(this.#unwritable());
      }
    });
  }

  aclrtMemGetAllocationGranularity(
    propArg: aclrtPhysicalMemProp,
    option: number,
    granularity: Box<number>,
  ): number {
    if (!this.#initialized) return this.#uninitialized();
    const prop = readStruct<aclrtPhysicalMemProp>(propArg, PHYSICAL_MEM_PROP_SHAPE);
    if (prop === undefined) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'prop is NULL or cannot be read');
    if (!isBox(granularity)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'granularity is NULL');
    const location = this.#checkLocationAndAttr(prop);
    if (typeof location === 'number') return location;
    const opt = toInt(option);
    if (opt !== C.ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM && opt !== C.ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `option ${show(option)}`);
    return writeBox(granularity, this.#granularity(prop.memAttr, location, opt))
      ? C.ACL_SUCCESS
      : this.#unwritable();
  }

  aclrtMemGetAllocationPropertiesFromHandle(handle: Pointer, prop: Box<aclrtPhysicalMemProp>): number {
    if (!this.#initialized) return this.#uninitialized();
    if (isNull(handle)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'handle is NULL');
    if (!isBox(prop)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'prop is NULL');
    const a = this.#allocation(handle);
    if (a === undefined) return this.#bad(C.ACL_ERROR_RT_INVALID_HANDLE, `no handle ${show(handle)}`);
    const { location } = a.props;
    return writeBox(prop, {
      handleType: C.ACL_MEM_HANDLE_TYPE_NONE,
      allocationType: C.ACL_MEM_ALLOCATION_TYPE_PINNED,
      memAttr: this.#memAttrs.get(a) ?? C.ACL_HBM_MEM_HUGE,
      location: {
        id: location.id,
        type: location.type === 'device' ? C.ACL_MEM_LOCATION_TYPE_DEVICE : C.ACL_MEM_LOCATION_TYPE_HOST,
      },
      reserve: 0n,
    })
      ? C.ACL_SUCCESS
      : this.#unwritable();
  }

  // --- sharing between processes ------------------------------------------------------------------

  /**
   * flags: ACL_RT_VMM_EXPORT_FLAG_DEFAULT (importers must be named with
   * aclrtMemSetPidToShareableHandle) or ..._DISABLE_PID_VALIDATION. A handle
   * is exported at most once (CANN: handle and shareableHandle are one to one).
   */
  aclrtMemExportToShareableHandle(
    handle: Pointer,
    handleType: number,
    flags: Size,
    shareableHandle: Box<bigint>,
  ): number {
    if (!this.#initialized) return this.#uninitialized();
    if (isNull(handle)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'handle is NULL');
    if (toInt(handleType) !== C.ACL_MEM_HANDLE_TYPE_NONE)
      return this.#bad(
        C.ACL_ERROR_INVALID_PARAM,
        `handleType ${show(handleType)} must be ACL_MEM_HANDLE_TYPE_NONE`,
      );
    if (!isBox(shareableHandle)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'shareableHandle is NULL');
    const a = this.#allocation(handle);
    if (a === undefined) return this.#bad(C.ACL_ERROR_RT_INVALID_HANDLE, `no handle ${show(handle)}`);
    const f = toCount(flags);
    if (f !== C.ACL_RT_VMM_EXPORT_FLAG_DEFAULT && f !== C.ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `flags ${show(flags)}`);
    if (a.origin !== 'created')
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, 'only memory from aclrtMallocPhysical can be exported');
    if (a.props.location.type !== 'device')
      return this.#bad(C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT, 'only device memory can be shared');
    if (a.exports > 0) return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, 'the handle was already exported');
    // The box must take a write before the export, not only pass isBox.
    if (!probeBox(shareableHandle)) return this.#unwritable();
    return this.#run(() => {
      const token = this.runtime.exportShareable(a, f === C.ACL_RT_VMM_EXPORT_FLAG_DEFAULT);
      // A Proxy that took the probe and refuses the token: the export is withdrawn (all or nothing).
      if (!writeBox(shareableHandle, BigInt(token))) {
        this.runtime.unshare(token);
        throw new AclRefusal(this.#unwritable());
      }
      this.#exported.add(token);
    });
  }

  /**
   * A caller's list of `count` pids, read once (Note [Untrusted arguments]),
   * or the code of its refusal: NULL or short lists and non-integer pids are
   * refused alike by both whitelist calls; a count that is not positive with
   * `countCode` (the two calls' references give different codes).
   */
  #readPids(
    pid: ArrayLike<number> | null,
    count: Size,
    countName: string,
    countCode: number,
  ): number[] | number {
    const k = toCount(count);
    const given = readArrayLike(pid, Math.max(k, 0));
    if (given === undefined) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'pid is NULL or cannot be read');
    if (k <= 0) return this.#bad(countCode, `${countName} ${show(count)} must be positive`);
    if (given === 'short') return this.#bad(C.ACL_ERROR_INVALID_PARAM, `pid holds fewer than ${k} entries`);
    const pids: number[] = [];
    for (let i = 0; i < k; i++) {
      const p = toInt(given[i]);
      if (!Number.isInteger(p)) return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `pid[${i}] is not a pid`);
      pids.push(p);
    }
    return pids;
  }

  /** Name the processes (by aclrtDeviceGetBareTgid's pid) that may import; called by the exporter. */
  aclrtMemSetPidToShareableHandle(
    shareableHandle: Size,
    pid: ArrayLike<number> | null,
    pidNum: Size,
  ): number {
    if (!this.#initialized) return this.#uninitialized();
    const pids = this.#readPids(pid, pidNum, 'pidNum', C.ACL_ERROR_INVALID_PARAM);
    if (!Array.isArray(pids)) return pids;
    const token = toCount(shareableHandle);
    if (!this.#exported.has(token))
      return this.#bad(
        C.ACL_ERROR_RT_PARAM_INVALID,
        `this process exported no shareable handle ${show(shareableHandle)}`,
      );
    return this.#run(() => this.runtime.allowImport(token, pids));
  }

  /** A handle in this process to memory another process exported. deviceId names the device it is used on. */
  aclrtMemImportFromShareableHandle(shareableHandle: Size, deviceId: number, handle: Box<bigint>): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(handle)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'handle is NULL');
    if (!this.runtime.isDevice(toInt(deviceId)))
      return this.#bad(C.ACL_ERROR_RT_INVALID_DEVICEID, `no device ${show(deviceId)}`);
    const token = toCount(shareableHandle);
    // CANN: export and import in one process is not supported.
    if (this.#exported.has(token))
      return this.#bad(
        C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        'a process may not import its own shareable handle',
      );
    return this.#run(() => {
      const a = this.runtime.importShareable(token);
      if (!writeBox(handle, BigInt(a.id))) {
        this.runtime.release(a);
        throw new AclRefusal(this.#unwritable());
      }
    });
  }

  aclrtDeviceGetBareTgid(pid: Box<number>): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(pid)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'pid is NULL');
    return writeBox(pid, this.runtime.pid) ? C.ACL_SUCCESS : this.#unwritable();
  }

  // --- the one-step path ------------------------------------------------------------------------------

  /**
   * size rounds up to 32 bytes and gains 32 bytes of padding (none for the
   * 1 GiB huge-page policies), as CANN documents; core then maps whole
   * granules, so the padding shows when it crosses a 2 MiB boundary.
   */
  aclrtMalloc(devPtr: Box<bigint>, size: Size, policy: number): number {
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    if (!isBox(devPtr)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'devPtr is NULL');
    const n = toCount(size);
    if (n <= 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, `size ${show(size)} must be positive`);
    // Out-of-range policies are accepted (CANN: huge pages from 2 MiB, normal below).
    const base = toInt(policy) & 0xff;
    const padding =
      base === C.ACL_MEM_MALLOC_HUGE1G_ONLY || base === C.ACL_MEM_MALLOC_HUGE1G_ONLY_P2P
        ? 0
        : C.ACL_MALLOC_PADDING;
    const padded = aclMallocSize(n, padding);
    return this.#run(() => {
      // Exportable, so that aclrtIpcMemGetExportKey can share it (Note [ACL IPC keys]).
      const r = this.runtime.malloc(this.#current, padded, { handleTypes: HandleType.PosixFd });
      if (!writeBox(devPtr, BigInt(r.base))) {
        this.runtime.mfree(r.base);
        throw new AclRefusal(this.#unwritable());
      }
    });
  }

  aclrtFree(devPtr: Pointer): number {
    if (!this.#initialized) return this.#uninitialized();
    const va = toCount(devPtr ?? 0);
    if (va === 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'devPtr is NULL');
    const r = this.runtime.reservationAt(va);
    if (r === undefined || r.origin !== 'malloc')
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `0x${va.toString(16)} is not from aclrtMalloc`);
    if (this.#ipcImportAt(va) !== undefined)
      return this.#bad(
        C.ACL_ERROR_RT_PARAM_INVALID,
        'memory imported by key is closed with aclrtIpcMemClose',
      );
    return this.#run(() => {
      this.runtime.mfree(va);
      // Core withdrew the memory's tokens with it (Note [ACL IPC keys]): its keys are gone.
      for (const [key, e] of this.#ipcExports) if (e.va === va) this.#ipcExports.delete(key);
    });
  }

  aclrtGetMemInfo(attr: number, free: Box<number>, total: Box<number>): number {
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    if (!isBox(free) || !isBox(total)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'free or total is NULL');
    const a = toInt(attr);
    if (!(a >= C.ACL_DDR_MEM && a <= C.ACL_MEM_P2P_HUGE1G))
      return this.#bad(C.ACL_ERROR_INVALID_PARAM, `attr ${show(attr)}`);
    if (!HBM_MEM_ATTRS.has(a) && a !== C.ACL_MEM_NORMAL && a !== C.ACL_MEM_HUGE && a !== C.ACL_MEM_HUGE1G) {
      // DDR on the device: an Ascend 910B has none.
      return writeBoxes(free, 0, total, 0) ? C.ACL_SUCCESS : this.#unwritable();
    }
    const info = this.runtime.memoryInfo(this.#current);
    return writeBoxes(free, info.free, total, info.total) ? C.ACL_SUCCESS : this.#unwritable();
  }

  // --- copies and sets -------------------------------------------------------------------------------------

  aclrtMemcpy(dst: MemcpyPointer, destMax: Size, src: MemcpyPointer, count: Size, kind: number): number {
    return this.#memcpy(dst, destMax, src, count, kind, null);
  }

  aclrtMemcpyAsync(
    dst: MemcpyPointer,
    destMax: Size,
    src: MemcpyPointer,
    count: Size,
    kind: number,
    stream: Pointer,
  ): number {
    return this.#memcpy(dst, destMax, src, count, kind, stream);
  }

  aclrtMemset(devPtr: Pointer, maxCount: Size, value: number, count: Size): number {
    return this.#memset(devPtr, maxCount, value, count, null);
  }

  /** aclrtMemset on a stream (NULL: the default stream). */
  aclrtMemsetAsync(devPtr: Pointer, maxCount: Size, value: number, count: Size, stream: Pointer): number {
    return this.#memset(devPtr, maxCount, value, count, stream);
  }

  #memset(devPtr: Pointer, maxCount: Size, value: number, count: Size, stream: Pointer): number {
    if (!this.#initialized) return this.#uninitialized();
    const va = toCount(devPtr ?? 0);
    if (va === 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'devPtr is NULL');
    const n = toCount(count);
    const max = toCount(maxCount);
    if (n <= 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, `count ${show(count)} must be positive`);
    if (max < n) return this.#bad(C.ACL_ERROR_INVALID_PARAM, `count ${n} exceeds maxCount ${show(maxCount)}`);
    if (!Number.isInteger(value)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, `value ${show(value)}`);
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    let streamId = 0;
    if (!isNull(stream)) {
      const s = this.#stream(stream);
      if (s === undefined) return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `no stream ${show(stream)}`);
      streamId = s.id;
    }
    return this.#run(() => this.runtime.fill(this.#current, va, value, n, streamId));
  }

  // --- streams ---------------------------------------------------------------------------------------------

  aclrtCreateStream(stream: Box<bigint>): number {
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    if (!isBox(stream)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'stream is NULL');
    return this.#run(() => {
      const id = this.runtime.createStream(this.#current);
      const h = STREAM_BASE + this.#nextStream++;
      if (!writeBox(stream, h)) {
        this.runtime.destroyStream(id);
        throw new AclRefusal(this.#unwritable());
      }
      this.#streams.set(h, { id, device: this.#current });
    });
  }

  /** A NULL stream is the default stream: its work is everything submitted synchronously, so only the device's streams remain. */
  aclrtSynchronizeStream(stream: Pointer): number {
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    if (isNull(stream)) return this.#run(() => this.runtime.synchronize(this.#current));
    const s = this.#stream(stream);
    if (s === undefined) return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `no stream ${show(stream)}`);
    return this.#run(() => this.runtime.synchronizeStream(s.id));
  }

  aclrtDestroyStream(stream: Pointer): number {
    return this.#destroyStream(stream, false);
  }

  #destroyStream(stream: Pointer, discard: boolean): number {
    if (!this.#initialized) return this.#uninitialized();
    if (isNull(stream)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'stream is NULL');
    const s = this.#stream(stream);
    if (s === undefined) return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `no stream ${show(stream)}`);
    // Gone even when its queued work failed (Note [Destroying a busy stream], cuda.ts).
    try {
      this.runtime.destroyStream(s.id, { discard });
    } catch (e) {
      if (this.runtime.hasStream(s.id)) return this.#code(e);
    }
    this.#streams.delete(BigInt(stream as bigint | number));
    return C.ACL_SUCCESS;
  }

  aclrtSynchronizeDevice(): number {
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    return this.#run(() => this.runtime.synchronize(this.#current));
  }

  // --- events (Note [ACL events]) ------------------------------------------------------------------------

  /** An event usable for every event call (stream waits and resets included). */
  aclrtCreateEvent(event: Box<bigint>): number {
    return this.#createEvent(event, ACL_EVENT_DEFAULT_FLAGS);
  }

  /** flag: a bitmap of ACL_EVENT_SYNC, ACL_EVENT_CAPTURE_STREAM_PROGRESS, ACL_EVENT_TIME_LINE. */
  aclrtCreateEventWithFlag(event: Box<bigint>, flag: number): number {
    const f = typeof flag === 'number' && Number.isInteger(flag) ? flag : -1;
    if (f <= 0 || (f & ~ACL_EVENT_FLAG_BITS) !== 0) {
      if (!this.#initialized) return this.#uninitialized();
      return this.#bad(C.ACL_ERROR_INVALID_PARAM, `flag ${show(flag)} is not a bitmap of ACL_EVENT_* flags`);
    }
    return this.#createEvent(event, f);
  }

  #createEvent(event: Box<bigint>, flags: number): number {
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    if (!isBox(event) || !probeBox(event))
      return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'event is NULL or cannot be written');
    return this.#run(() => {
      const id = this.runtime.createEvent(this.#current);
      if (!writeBox(event, ACL_EVENT_BASE + BigInt(id))) {
        this.runtime.destroyEvent(id);
        throw new AclRefusal(this.#unwritable());
      }
      this.#events.set(id, { flags, recorded: false });
    });
  }

  /** Record on `stream` (NULL: the default stream), which must be of the event's device. */
  aclrtRecordEvent(event: Pointer, stream: Pointer): number {
    const found = this.#eventArg(event);
    if (typeof found === 'number') return found;
    const [id, e] = found;
    const s = isNull(stream) ? { id: 0, device: this.#current } : this.#stream(stream);
    if (s === undefined) return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `no stream ${show(stream)}`);
    if (s.device !== this.runtime.eventDevice(id))
      return this.#bad(C.ACL_ERROR_RT_STREAM_CONTEXT, 'the stream and the event belong to different devices');
    const result = this.#run(() => this.runtime.recordEvent(id, s.id));
    if (result === C.ACL_SUCCESS) e.recorded = true;
    return result;
  }

  /** ACL_EVENT_RECORDED_STATUS_COMPLETE once recorded work has run; NOT_READY before, and for an event never recorded (or reset). */
  aclrtQueryEventStatus(event: Pointer, status: Box<number>): number {
    const found = this.#eventArg(event);
    if (typeof found === 'number') return found;
    if (!isBox(status)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'status is NULL');
    const [id, e] = found;
    let done: boolean;
    try {
      done = e.recorded && this.runtime.queryEvent(id);
    } catch (err) {
      return this.#code(err);
    }
    const value = done ? C.ACL_EVENT_RECORDED_STATUS_COMPLETE : C.ACL_EVENT_RECORDED_STATUS_NOT_READY;
    return writeBox(status, value) ? C.ACL_SUCCESS : this.#unwritable();
  }

  aclrtSynchronizeEvent(event: Pointer): number {
    const found = this.#eventArg(event);
    if (typeof found === 'number') return found;
    return this.#run(() => this.runtime.synchronizeEvent(found[0]));
  }

  /** Later work on `stream` (NULL: the default stream) waits for the event's recorded work; the event needs ACL_EVENT_SYNC. */
  aclrtStreamWaitEvent(stream: Pointer, event: Pointer): number {
    const found = this.#eventArg(event);
    if (typeof found === 'number') return found;
    const [id, e] = found;
    const s = isNull(stream) ? { id: 0, device: this.#current } : this.#stream(stream);
    if (s === undefined) return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `no stream ${show(stream)}`);
    if ((e.flags & C.ACL_EVENT_SYNC) === 0)
      return this.#bad(
        C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        'an event made without ACL_EVENT_SYNC cannot be waited on',
      );
    return this.#run(() => this.runtime.streamWaitEvent(s.id, id));
  }

  /** Back to "never recorded" (Note [ACL events]: at once, not in stream order); the event needs ACL_EVENT_SYNC. */
  aclrtResetEvent(event: Pointer, stream: Pointer): number {
    const found = this.#eventArg(event);
    if (typeof found === 'number') return found;
    const [, e] = found;
    if (!isNull(stream) && this.#stream(stream) === undefined)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `no stream ${show(stream)}`);
    if ((e.flags & C.ACL_EVENT_SYNC) === 0)
      return this.#bad(
        C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        'an event made without ACL_EVENT_SYNC cannot be reset',
      );
    e.recorded = false;
    return C.ACL_SUCCESS;
  }

  aclrtDestroyEvent(event: Pointer): number {
    const found = this.#eventArg(event);
    if (typeof found === 'number') return found;
    const result = this.#run(() => this.runtime.destroyEvent(found[0]));
    if (result === C.ACL_SUCCESS) this.#events.delete(found[0]);
    return result;
  }

  /** A live event of this process with its flavour state, or the code refusing the argument. */
  #eventArg(h: Pointer): [number, { readonly flags: number; recorded: boolean }] | number {
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    if (isNull(h)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'event is NULL');
    const key =
      typeof h === 'bigint' ? h : typeof h === 'number' && Number.isSafeInteger(h) ? BigInt(h) : -1n;
    const id = key - ACL_EVENT_BASE;
    const e = id > 0n && id <= BigInt(Number.MAX_SAFE_INTEGER) ? this.#events.get(Number(id)) : undefined;
    if (e === undefined) return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `no event ${show(h)}`);
    return [Number(id), e];
  }

  // --- calls ported programs reach for (Note [ACL calls of ported programs]) -------------------------

  /** Page-locked host memory: a host buffer of `size` bytes that aclrtMemcpy takes as a host pointer. */
  aclrtMallocHost(hostPtr: Box<Uint8Array | null>, size: Size): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(hostPtr)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'hostPtr is NULL');
    const n = toCount(size);
    if (n <= 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, `size ${show(size)} must be positive`);
    let buffer: Uint8Array;
    try {
      buffer = new Uint8Array(n);
    } catch {
      return this.#bad(C.ACL_ERROR_RT_MEMORY_ALLOCATION, `${n} bytes of host memory are not available`);
    }
    if (!writeBox(hostPtr, buffer)) return this.#unwritable();
    this.#hostBuffers.add(buffer);
    return C.ACL_SUCCESS;
  }

  aclrtFreeHost(hostPtr: Uint8Array | Pointer): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isHostBuffer(hostPtr)) {
      if (isNull(hostPtr)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'hostPtr is NULL');
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `${show(hostPtr)} is not from aclrtMallocHost`);
    }
    if (!this.#hostBuffers.delete(hostPtr as Uint8Array))
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, 'the buffer is not from aclrtMallocHost, or was freed');
    return C.ACL_SUCCESS;
  }

  /**
   * Destroy a stream without waiting for it: its unfinished tasks are
   * dropped, as CANN documents, so a queued copy or set never writes. Over
   * the real NVIDIA driver, which cannot drop work, they finish instead
   * (Note [Forced stream destroy], backend.ts).
   */
  aclrtDestroyStreamForce(stream: Pointer): number {
    return this.#destroyStream(stream, true);
  }

  /** aclrtResetDevice whatever the aclrtSetDevice count: the device's resources go now. */
  aclrtResetDeviceForce(deviceId: number): number {
    if (!this.#initialized) return this.#uninitialized();
    const d = toInt(deviceId);
    if (!this.runtime.isDevice(d))
      return this.#bad(C.ACL_ERROR_RT_INVALID_DEVICEID, `no device ${show(deviceId)}`);
    if (this.#deviceRefs[d] > 1) this.#deviceRefs[d] = 1;
    return this.aclrtResetDevice(d);
  }

  /** A context on deviceId, made the calling thread's current one (as CANN does). */
  aclrtCreateContext(context: Box<bigint>, deviceId: number): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(context)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'context is NULL');
    const d = toInt(deviceId);
    if (!this.runtime.isDevice(d))
      return this.#bad(C.ACL_ERROR_RT_INVALID_DEVICEID, `no device ${show(deviceId)}`);
    const h = CONTEXT_BASE + this.#nextContext++;
    if (!writeBox(context, h)) return this.#unwritable();
    this.#contexts.set(h, d);
    this.#context = h;
    this.#current = d;
    return C.ACL_SUCCESS;
  }

  /** Only aclrtCreateContext's contexts are destroyed; a device's default one goes with aclrtResetDevice. */
  aclrtDestroyContext(context: Pointer): number {
    if (!this.#initialized) return this.#uninitialized();
    if (isNull(context)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'context is NULL');
    const h = this.#contextHandle(context);
    if (h === undefined || !this.#contexts.has(h))
      return this.#bad(
        C.ACL_ERROR_RT_PARAM_INVALID,
        `no context ${show(context)} made by aclrtCreateContext`,
      );
    this.#contexts.delete(h);
    if (this.#context === h) {
      this.#context = 0n;
      this.#current = -1;
    }
    return C.ACL_SUCCESS;
  }

  aclrtSetCurrentContext(context: Pointer): number {
    if (!this.#initialized) return this.#uninitialized();
    if (isNull(context)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'context is NULL');
    const h = this.#contextHandle(context);
    const d = h === undefined ? undefined : this.#contextDevice(h);
    if (h === undefined || d === undefined)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `no context ${show(context)}`);
    this.#context = h;
    this.#current = d;
    return C.ACL_SUCCESS;
  }

  /** The current context: the one set or created last, or the current device's default one. */
  aclrtGetCurrentContext(context: Box<bigint>): number {
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    if (!isBox(context)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'context is NULL');
    return writeBox(context, this.#context) ? C.ACL_SUCCESS : this.#unwritable();
  }

  /** 1 when both devices exist and differ (every pair of simulated devices can exchange data). */
  aclrtDeviceCanAccessPeer(canAccessPeer: Box<number>, deviceId: number, peerDeviceId: number): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(canAccessPeer)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'canAccessPeer is NULL');
    const d = toInt(deviceId);
    const peer = toInt(peerDeviceId);
    if (!this.runtime.isDevice(d))
      return this.#bad(C.ACL_ERROR_RT_INVALID_DEVICEID, `no device ${show(deviceId)}`);
    if (!this.runtime.isDevice(peer))
      return this.#bad(C.ACL_ERROR_RT_INVALID_DEVICEID, `no device ${show(peerDeviceId)}`);
    return writeBox(canAccessPeer, d === peer ? 0 : 1) ? C.ACL_SUCCESS : this.#unwritable();
  }

  /** peerDeviceId may not be the current device; flags are reserved (0). Note [ACL peer access]. */
  aclrtDeviceEnablePeerAccess(peerDeviceId: number, flags: Size): number {
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    if (toCount(flags) !== 0)
      return this.#bad(C.ACL_ERROR_INVALID_PARAM, `flags ${show(flags)} is reserved (0)`);
    const peer = toInt(peerDeviceId);
    if (!this.runtime.isDevice(peer))
      return this.#bad(C.ACL_ERROR_RT_INVALID_DEVICEID, `no device ${show(peerDeviceId)}`);
    if (peer === this.#current)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `device ${peer} is the current device`);
    this.#peers.add(`${this.#current}>${peer}`);
    return C.ACL_SUCCESS;
  }

  aclrtDeviceDisablePeerAccess(peerDeviceId: number): number {
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    const peer = toInt(peerDeviceId);
    if (!this.runtime.isDevice(peer))
      return this.#bad(C.ACL_ERROR_RT_INVALID_DEVICEID, `no device ${show(peerDeviceId)}`);
    if (!this.#peers.delete(`${this.#current}>${peer}`))
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `peer access to device ${peer} is not enabled`);
    return C.ACL_SUCCESS;
  }

  /**
   * Share aclrtMalloc memory by a key (Note [ACL IPC keys]). devPtr must be
   * the start of this process's aclrtMalloc memory (not memory imported by
   * key, nor a VMM address), size within it, len at least 65 (the key's 64
   * characters and NUL), flags DEFAULT (importers must be named with
   * aclrtIpcMemSetImportPid) or DISABLE_PID_VALIDATION. Each call makes a
   * new key.
   */
  aclrtIpcMemGetExportKey(devPtr: Pointer, size: Size, key: Box<string>, len: Size, flags: Size): number {
    if (!this.#initialized) return this.#uninitialized();
    const va = toCount(devPtr ?? 0);
    if (va === 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'devPtr is NULL');
    if (!isBox(key)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'key is NULL');
    // The runtime's checks (rtsIpcMemGetExportKey): zero size and len, flags past DISABLE_PID_VALIDATION.
    const n = toCount(size);
    if (n <= 0) return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `size ${show(size)} must be positive`);
    const l = toCount(len);
    if (l <= 0) return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `len ${show(len)} must be positive`);
    const f = toCount(flags);
    if (
      f !== C.ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT &&
      f !== C.ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION
    )
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `flags ${show(flags)}`);
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    // The driver's (halShmemCreateHandle): a name buffer of 65 or more, memory allocated directly, no offset.
    if (l < C.ACL_IPC_KEY_LEN)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `len ${l} is below ${C.ACL_IPC_KEY_LEN}`);
    const r = this.runtime.reservationAt(va);
    if (r === undefined || r.origin !== 'malloc' || this.#ipcImportAt(va) !== undefined)
      return this.#bad(
        C.ACL_ERROR_RT_PARAM_INVALID,
        `0x${va.toString(16)} is not the start of aclrtMalloc memory`,
      );
    if (n > r.size)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `size ${n} is past the allocation (${r.size})`);
    return this.#run(() => {
      const checkPid = f === C.ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT;
      const token = this.runtime.exportMalloc(va, checkPid);
      const name = ipcKey(token);
      if (!writeBox(key, name)) {
        // All or nothing: the key nobody can read is withdrawn (Note [ACL IPC keys]).
        this.runtime.unshare(token);
        throw new AclRefusal(this.#unwritable());
      }
      this.#ipcExports.set(name, { token, va, checkPid });
    });
  }

  /**
   * Name the processes (their aclrtDeviceGetBareTgid) that may import a key
   * this process exported with ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT. A key
   * exported with DISABLE_PID_VALIDATION takes no list:
   * ACL_ERROR_RT_NO_PERMISSION, as CANN's driver makes the two exclusive.
   */
  aclrtIpcMemSetImportPid(key: string, pid: ArrayLike<number> | null, num: Size): number {
    if (!this.#initialized) return this.#uninitialized();
    if (typeof key !== 'string') return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'key is NULL');
    const pids = this.#readPids(pid, num, 'num', C.ACL_ERROR_RT_PARAM_INVALID);
    if (!Array.isArray(pids)) return pids;
    // The runtime asks for a current context here, as for every IPC call (ApiImpl::SetIpcMemPid).
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    const e = this.#ipcExports.get(key);
    if (e === undefined)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `this process exported no key ${show(key)}`);
    if (!e.checkPid)
      return this.#bad(C.ACL_ERROR_RT_NO_PERMISSION, 'the key was exported with DISABLE_PID_VALIDATION');
    return this.#run(() => this.runtime.allowImport(e.token, pids));
  }

  /**
   * Map the memory behind a key into this process: *devPtr is an address the
   * current device may read and write at once, until aclrtIpcMemClose(key).
   * flags DEFAULT or ENABLE_PEER_ACCESS (which also enables peer access to
   * the memory's device, as aclrtDeviceEnablePeerAccess would).
   */
  aclrtIpcMemImportByKey(devPtr: Box<bigint>, key: string, flags: Size): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(devPtr)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'devPtr is NULL');
    if (typeof key !== 'string') return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'key is NULL');
    const f = toCount(flags);
    if (f !== C.ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT && f !== C.ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `flags ${show(flags)}`);
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    const token = ipcToken(key);
    if (token === undefined) return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `no key ${show(key)}`);
    const d = this.#current;
    return this.#run(() => {
      const r = this.runtime.importMalloc(token, d);
      if (!writeBox(devPtr, BigInt(r.base))) {
        this.runtime.mfree(r.base);
        throw new AclRefusal(this.#unwritable());
      }
      const list = this.#ipcImports.get(key) ?? [];
      list.push(r.base);
      this.#ipcImports.set(key, list);
      const home = this.runtime.mappingAt(r.base)?.allocation.props.location;
      if (f === C.ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS && home?.type === 'device' && home.id !== d)
        this.#peers.add(`${d}>${home.id}`);
    });
  }

  /**
   * In an importer: unmap its oldest import of the key (the memory stays
   * while others hold it). In the exporter: withdraw the key, so no process
   * can import it any more; imports already made keep working, and the
   * memory stays the exporter's until aclrtFree. CANN asks importers to
   * close before the exporter does; nothing here depends on that order.
   */
  aclrtIpcMemClose(key: string): number {
    if (!this.#initialized) return this.#uninitialized();
    if (typeof key !== 'string') return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'key is NULL');
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    const imports = this.#ipcImports.get(key);
    if (imports !== undefined) {
      const va = imports[0];
      return this.#run(() => {
        this.runtime.mfree(va);
        imports.shift();
        if (imports.length === 0) this.#ipcImports.delete(key);
      });
    }
    const e = this.#ipcExports.get(key);
    if (e === undefined)
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `no key ${show(key)} was exported or imported here`);
    return this.#run(() => {
      this.runtime.unshare(e.token);
      this.#ipcExports.delete(key);
    });
  }

  /** The key of an import by key that starts at `va`, if one does. */
  #ipcImportAt(va: number): string | undefined {
    for (const [key, list] of this.#ipcImports) if (list.includes(va)) return key;
    return undefined;
  }

  /**
   * aclrtMemExportToShareableHandle with a share type (Note [ACL fabric
   * handles]): DEFAULT works as the first version, writing the token to
   * *shareableHandle; FABRIC (across servers) answers ACL_ERROR_RT_FEATURE_NOT_SUPPORT.
   */
  aclrtMemExportToShareableHandleV2(
    handle: Pointer,
    flags: Size,
    shareType: number,
    shareableHandle: Box<bigint>,
  ): number {
    if (!this.#initialized) return this.#uninitialized();
    const refused = this.#shareType(shareType);
    if (refused !== undefined) return refused;
    return this.aclrtMemExportToShareableHandle(handle, C.ACL_MEM_HANDLE_TYPE_NONE, flags, shareableHandle);
  }

  /** shareableHandle points to the exported value (a box here). */
  aclrtMemSetPidToShareableHandleV2(
    shareableHandle: Box<bigint>,
    shareType: number,
    pid: ArrayLike<number> | null,
    pidNum: Size,
  ): number {
    if (!this.#initialized) return this.#uninitialized();
    if (!isBox(shareableHandle)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'shareableHandle is NULL');
    const refused = this.#shareType(shareType);
    if (refused !== undefined) return refused;
    return this.aclrtMemSetPidToShareableHandle(shareableHandle.value, pid, pidNum);
  }

  /** The handle is made for the current device (the first version names one; this one does not). */
  aclrtMemImportFromShareableHandleV2(
    shareableHandle: Box<bigint>,
    shareType: number,
    flags: Size,
    handle: Box<bigint>,
  ): number {
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    if (!isBox(shareableHandle)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'shareableHandle is NULL');
    if (toCount(flags) !== 0)
      return this.#bad(C.ACL_ERROR_INVALID_PARAM, `flags ${show(flags)} is reserved (0)`);
    const refused = this.#shareType(shareType);
    if (refused !== undefined) return refused;
    return this.aclrtMemImportFromShareableHandle(shareableHandle.value, this.#current, handle);
  }

  /** undefined for ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT; the refusal otherwise. */
  #shareType(shareType: number): number | undefined {
    const t = toInt(shareType);
    if (t === C.ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT) return undefined;
    if (t === C.ACL_MEM_SHARE_HANDLE_TYPE_FABRIC)
      return this.#bad(
        C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
        'fabric handles (sharing across servers) are not simulated',
      );
    return this.#bad(C.ACL_ERROR_INVALID_PARAM, `shareType ${show(shareType)}`);
  }

  #contextHandle(context: Pointer): bigint | undefined {
    if (typeof context === 'bigint') return context;
    return typeof context === 'number' && Number.isSafeInteger(context) ? BigInt(context) : undefined;
  }

  /** The device of a live context: a created one, or the default one of a device aclrtSetDevice holds. */
  #contextDevice(h: bigint): number | undefined {
    const created = this.#contexts.get(h);
    if (created !== undefined) return created;
    const d = Number(h - DEFAULT_CONTEXT_BASE);
    return h >= DEFAULT_CONTEXT_BASE && this.runtime.isDevice(d) && this.#deviceRefs[d] > 0 ? d : undefined;
  }

  // --- errors ----------------------------------------------------------------------------------------------

  /** The description of this process's most recent failed call, cleared by reading; null when there is none. */
  aclGetRecentErrMsg(): string | null {
    const msg = this.#recentError;
    this.#recentError = null;
    return msg;
  }

  // --- helpers -----------------------------------------------------------------------------------------------

  #memcpy(
    dst: MemcpyPointer,
    destMax: Size,
    src: MemcpyPointer,
    count: Size,
    kind: number,
    stream: Pointer | null,
  ): number {
    if (!this.#initialized) return this.#uninitialized();
    if (isNullPointer(dst)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'dst is NULL');
    if (isNullPointer(src)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'src is NULL');
    const n = toCount(count);
    const max = toCount(destMax);
    if (n <= 0) return this.#bad(C.ACL_ERROR_INVALID_PARAM, `count ${show(count)} must be positive`);
    if (max < n) return this.#bad(C.ACL_ERROR_INVALID_PARAM, `count ${n} exceeds destMax ${show(destMax)}`);
    // Host operands by the views' internal slots, as plain views of the same bytes (Note [Untrusted arguments]).
    const srcBytes = hostBytes(src);
    const dstBytes = hostBytes(dst);
    let k = toInt(kind);
    if (k === C.ACL_MEMCPY_DEFAULT) {
      // The runtime infers the direction from the pointers.
      k =
        srcBytes !== undefined && dstBytes !== undefined
          ? C.ACL_MEMCPY_HOST_TO_HOST
          : srcBytes !== undefined
            ? C.ACL_MEMCPY_HOST_TO_DEVICE
            : dstBytes !== undefined
              ? C.ACL_MEMCPY_DEVICE_TO_HOST
              : C.ACL_MEMCPY_DEVICE_TO_DEVICE;
    } else if (k === C.ACL_MEMCPY_INNER_DEVICE_TO_DEVICE || k === C.ACL_MEMCPY_INTER_DEVICE_TO_DEVICE) {
      k = C.ACL_MEMCPY_DEVICE_TO_DEVICE;
    } else if (k === C.ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE) {
      k = C.ACL_MEMCPY_HOST_TO_DEVICE;
    }
    const hostSrc = k === C.ACL_MEMCPY_HOST_TO_HOST || k === C.ACL_MEMCPY_HOST_TO_DEVICE;
    const hostDst = k === C.ACL_MEMCPY_HOST_TO_HOST || k === C.ACL_MEMCPY_DEVICE_TO_HOST;
    if (k < C.ACL_MEMCPY_HOST_TO_HOST || k > C.ACL_MEMCPY_DEVICE_TO_DEVICE)
      return this.#bad(C.ACL_ERROR_INVALID_PARAM, `kind ${show(kind)}`);
    if (hostSrc !== (srcBytes !== undefined) || hostDst !== (dstBytes !== undefined))
      return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `the pointers do not match kind ${show(kind)}`);
    if (srcBytes !== undefined && srcBytes.length < n)
      return this.#bad(C.ACL_ERROR_INVALID_PARAM, `src holds fewer than ${n} bytes`);
    if (dstBytes !== undefined && dstBytes.length < n)
      return this.#bad(C.ACL_ERROR_INVALID_PARAM, `dst holds fewer than ${n} bytes`);
    if (srcBytes !== undefined && dstBytes !== undefined) {
      dstBytes.set(srcBytes.subarray(0, n));
      return C.ACL_SUCCESS;
    }
    const code = this.#needDevice();
    if (code !== C.ACL_SUCCESS) return code;
    let streamId = 0;
    if (stream !== null && !isNull(stream)) {
      const s = this.#stream(stream);
      if (s === undefined) return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `no stream ${show(stream)}`);
      streamId = s.id;
    }
    const d = this.#current;
    return this.#run(() => {
      if (srcBytes !== undefined)
        this.runtime.write(d, toCount(dst as Pointer), srcBytes.subarray(0, n), streamId);
      else if (dstBytes !== undefined)
        this.runtime.read(d, toCount(src as Pointer), dstBytes.subarray(0, n), streamId);
      else this.runtime.copy(d, toCount(dst as Pointer), toCount(src as Pointer), n, streamId);
    });
  }

  /** Validate prop in CANN's order (acl layer: handleType, allocationType, location type, memAttr); a code if bad. */
  #checkProp(prop: aclrtPhysicalMemProp): Location | number {
    if (prop.handleType !== C.ACL_MEM_HANDLE_TYPE_NONE)
      return this.#bad(
        C.ACL_ERROR_INVALID_PARAM,
        `handleType ${show(prop.handleType)} must be ACL_MEM_HANDLE_TYPE_NONE`,
      );
    if (prop.allocationType !== C.ACL_MEM_ALLOCATION_TYPE_PINNED)
      return this.#bad(
        C.ACL_ERROR_INVALID_PARAM,
        `allocationType ${show(prop.allocationType)} must be PINNED`,
      );
    return this.#checkLocationAndAttr(prop);
  }

  #checkLocationAndAttr(prop: aclrtPhysicalMemProp): Location | number {
    const loc = prop.location;
    if (!isStruct(loc)) return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'prop.location is missing');
    if (loc.type === C.ACL_MEM_LOCATION_TYPE_UNREGISTERED)
      return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'location type ACL_MEM_LOCATION_TYPE_UNREGISTERED');
    const isDevice = loc.type === C.ACL_MEM_LOCATION_TYPE_DEVICE;
    if (isDevice && DDR_MEM_ATTRS.has(prop.memAttr))
      return this.#bad(C.ACL_ERROR_INVALID_PARAM, `memAttr ${show(prop.memAttr)} is for host locations only`);
    if (!KNOWN_MEM_ATTRS.has(prop.memAttr))
      return this.#bad(C.ACL_ERROR_INVALID_PARAM, `memAttr ${show(prop.memAttr)} is not supported`);
    if (isDevice) {
      if (!this.runtime.isDevice(loc.id))
        return this.#bad(C.ACL_ERROR_RT_INVALID_DEVICEID, `no device ${show(loc.id)}`);
      return { type: 'device', id: loc.id };
    }
    if (loc.type === C.ACL_MEM_LOCATION_TYPE_HOST) return { type: 'host', id: 0 };
    if (loc.type === C.ACL_MEM_LOCATION_TYPE_HOST_NUMA) {
      const id = toCount(loc.id);
      if (id < 0) return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `NUMA node ${show(loc.id)}`);
      return { type: 'host', id };
    }
    if (loc.type === C.ACL_MEM_LOCATION_TYPE_MANAGED)
      return this.#bad(C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT, 'managed memory has no physical handle');
    return this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `location type ${show(loc.type)}`);
  }

  /** Size and address granularity: 1 GiB for the HUGE1G attributes, the device's granularity (2 MiB) otherwise. */
  #granularity(memAttr: number, location: Location, option = C.ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM): number {
    if (HUGE1G_MEM_ATTRS.has(memAttr)) return GiB;
    const d = this.runtime.devices[location.type === 'device' ? location.id : 0];
    return Math.max(
      option === C.ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM ? d.minimumGranularity : d.recommendedGranularity,
      this.runtime.vaGranularity,
    );
  }

  /** The device ordinal an access location names, or the refusal. */
  #accessDevice(location: aclrtMemLocation): number | AclRefusal {
    if (location.type === C.ACL_MEM_LOCATION_TYPE_DEVICE) {
      if (this.runtime.isDevice(location.id)) return location.id;
      return new AclRefusal(this.#bad(C.ACL_ERROR_RT_INVALID_DEVICEID, `no device ${show(location.id)}`));
    }
    if (location.type === C.ACL_MEM_LOCATION_TYPE_HOST)
      return new AclRefusal(
        this.#bad(C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT, 'host access to device mappings is not simulated'),
      );
    return new AclRefusal(this.#bad(C.ACL_ERROR_RT_PARAM_INVALID, `location type ${show(location.type)}`));
  }

  #mappingStartingAt(va: number): Mapping | undefined {
    const m = this.runtime.mappingAt(va);
    return m !== undefined && m.va === va && m.reservation.origin === 'vmm' ? m : undefined;
  }

  #allocation(handle: Pointer): PhysicalAllocation | undefined {
    const id = toCount(handle ?? 0);
    return id <= 0 ? undefined : this.runtime.allocation(id);
  }

  #stream(h: Pointer): { id: number; device: number } | undefined {
    if (typeof h !== 'bigint' && typeof h !== 'number') return undefined;
    const key = typeof h === 'bigint' ? h : Number.isSafeInteger(h) ? BigInt(h) : -1n;
    return this.#streams.get(key);
  }

  #needDevice(): number {
    if (!this.#initialized) return this.#uninitialized();
    if (this.#current === -1)
      return this.#bad(C.ACL_ERROR_RT_CONTEXT_NULL, 'no device was set (aclrtSetDevice)');
    return C.ACL_SUCCESS;
  }

  #uninitialized(): number {
    return this.#gone
      ? this.#bad(C.ACL_ERROR_UNINITIALIZE, 'the process was disposed')
      : this.#bad(C.ACL_ERROR_UNINITIALIZE, 'aclInit was not called');
  }

  /** An out box that a Proxy refused after it passed isBox (Note [Untrusted arguments]). */
  #unwritable(): number {
    return this.#bad(C.ACL_ERROR_INVALID_PARAM, 'an out-parameter cannot be written');
  }

  /** Refuse with `code`, remembering why for aclGetRecentErrMsg. */
  #bad(code: number, reason: string): number {
    this.#reason = reason;
    return code;
  }

  #run(work: () => void): number {
    try {
      work();
      return C.ACL_SUCCESS;
    } catch (e) {
      return this.#code(e);
    }
  }

  /** VendorCodes' answer, plus the reason aclGetRecentErrMsg reports and ACL's own refusals. */
  #code(e: unknown): number {
    if (e instanceof AclRefusal) return e.code;
    const code = this.codes.code(e);
    this.#reason = isVmmError(e) ? e.message : `internal error: ${e instanceof Error ? e.message : show(e)}`;
    return code;
  }

  /**
   * Wrap each ACL call of this instance so a failing one leaves its
   * description for aclGetRecentErrMsg (and a success leaves it alone, as
   * ACL keeps the message until it is read).
   */
  #recordFailures(): void {
    const methods = this as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const name of ACL_FUNCTIONS) {
      if (name === 'aclGetRecentErrMsg') continue;
      const method = methods[name];
      methods[name] = (...args: unknown[]) => {
        this.#reason = undefined;
        const result = method.apply(this, args);
        if (typeof result === 'number' && result !== C.ACL_SUCCESS) {
          const codeName = C.ACL_ERROR_NAMES.get(result) ?? 'aclError';
          this.#recentError = `${name} failed: ${codeName} (${result})${this.#reason ? `: ${this.#reason}` : ''}`;
        }
        return result;
      };
    }
  }
}

/**
 * Note [ACL after dispose]
 * CANN has one code for a process whose runtime is not up:
 * ACL_ERROR_UNINITIALIZE (100001), what every call answers after
 * aclFinalize. A disposed AclFlavor answers it to every call, aclInit and
 * aclFinalize included (a disposed process cannot be initialised again),
 * changes nothing, and aclGetRecentErrMsg says the process was disposed.
 * aclGetRecentErrMsg itself keeps answering: it reads the process's last
 * message and has no code to give. Core's 'not-initialized' kind (a call on
 * a disposed Runtime) maps to the same code (error-table.ts).
 */

/**
 * Note [ACL map grants access]
 * Seed 2's seven steps go from aclrtMapMem straight to the task, with no
 * access step, and CANN's references agree: the aclrtMemMapNoAccess entry
 * says that, unlike aclrtMapMem, it leaves the device without access until
 * aclrtMemSetAccess. So aclrtMapMem grants read-write to the memory's own
 * device (the device of the handle's location; for host memory, the current
 * device when one is set) in the same call, all or nothing: a failed grant
 * unmaps again. Other devices still need aclrtMemSetAccess. Core keeps
 * CUDA's rule (a mapping starts with no access); the grant is the flavour's.
 */

/**
 * Note [ACL reservation sizes]
 * CANN's aclrtReserveMemAddress documents one size rule: size != 0. Real
 * allocators rely on it: an NPU caching allocator probes the call at start-up
 * with 512 bytes and flags 1, and takes anything but success or
 * feature-not-supported as a failure. A driver can only hand out whole pages
 * of address space, so the flavour reserves the size rounded up to the VA
 * granularity (2 MiB on the 910B): core's reservation is that rounded size,
 * the caller may map only what lies inside it (a mapping is a whole
 * granule), and aclrtReleaseMemAddress, which takes no size, releases the
 * whole of it. A size whose rounding leaves the safe integers answers
 * ACL_ERROR_RT_MEMORY_ALLOCATION, as no address space is that large.
 *
 * Note [ACL expectPtr]
 * Issue 11 calls expectPtr "a hint"; CANN's own sources say it is not one,
 * so a non-NULL expectPtr is taken exactly or the call fails. The evidence,
 * read for this (2026-12-01):
 *  - CANN's API reference for aclrtReserveMemAddress (hiascend.com, CANN
 *    8.x and 9.0; the same text in the open CANN runtime's
 *    docs/zh/api_ref/11-04_virtual_memory_management.md): NULL lets the
 *    system choose; non-NULL is a start the user specifies, inside the
 *    16T-24T window, which must not be occupied and must be aligned (a power
 *    of two below 1 GiB, 1 GiB above), "otherwise the reservation fails and
 *    the interface returns an error"; an experimental feature, not for
 *    production; the 950 takes NULL only. The 8.0 reference and acl_rt.h
 *    say expectPtr "must be nullptr".
 *  - The runtime passes it unchanged (aclrtReserveMemAddressImpl ->
 *    rtReserveMemAddress -> NpuDriver::ReserveMemAddress) to the driver's
 *    halMemAddressReserve, whose header calls a non-NULL addr a "specified
 *    address reserve" (2 MiB aligned; 1 GiB past 512 MiB, else the size's
 *    power of two) and says a just-freed, still cached address "fails to be
 *    applied for": no fallback to another address anywhere on the path.
 *  - Callers: torch_npu's expandable segments (device and host), DeepLink's
 *    Ascend segments and the CANN samples all pass NULL; none was found that
 *    passes an address and tolerates another one.
 * So: NULL -> the runtime's choice; non-NULL -> aligned as the driver asks
 * (the size's power of two, at least the 2 MiB granularity; 1 GiB past
 * 512 MiB) and free, taken exactly, else ACL_ERROR_RT_PARAM_INVALID (the
 * driver's DRV_ERROR_INVALID_VALUE, as CANN's error table converts it). Not
 * checked: the 16T-24T window (the simulated and the H200's address spaces
 * lie elsewhere).
 */

/**
 * Note [ACL host access]
 * aclrtMemSetAccess and aclrtMemGetAccess take HOST or DEVICE locations
 * (CANN: for HOST the id is ignored). The simulated machine has no host
 * path into device mappings (nothing on the host dereferences a device
 * address here; copies go through aclrtMemcpy), so a HOST grant is recorded
 * per mapping and reported back by aclrtMemGetAccess, and changes no copy.
 * A mapping made again starts without it (the record is on the Mapping
 * object, which a new map replaces).
 */

/**
 * Note [ACL calls of ported programs]
 * NPU caching allocators, sleep-mode allocators and framework VMM adapters
 * call more than the VMM entries: pinned host buffers (aclrtMallocHost),
 * forced stream and device teardown, explicit contexts, peer access, IPC by
 * key and the V2 shareable-handle calls. Each is here with CANN's prototype
 * and argument rules as its reference states them; where a rule's code is
 * not documented the closest runtime code is used (ACL_ERROR_RT_PARAM_INVALID
 * for a handle or key this process does not know). What the simulated part
 * lacks answers ACL_ERROR_RT_FEATURE_NOT_SUPPORT: fabric handles.
 *
 * Note [ACL peer access]
 * aclrtDeviceEnablePeerAccess is recorded per (current device, peer) pair
 * and undone by aclrtDeviceDisablePeerAccess or the current device's reset.
 * It gates nothing in the simulator: a copy between devices is governed by
 * the mappings' access (aclrtMemSetAccess), which is what core checks.
 * Enabling a pair twice succeeds (unsure: CANN documents no code for it).
 *
 * Note [ACL IPC keys]
 * aclrtIpcMemGetExportKey shares aclrtMalloc memory with other processes
 * under a string key (CANN's reference: key buffer len fixed at 65; flags
 * DEFAULT, which needs aclrtIpcMemSetImportPid, or DISABLE_PID_VALIDATION;
 * the importer gets a device pointer from aclrtIpcMemImportByKey and both
 * sides end with aclrtIpcMemClose, importers first, then the exporter's
 * aclrtFree). It is built on core's one-step sharing (Note [One-step
 * sharing], runtime.ts): the key is the machine-wide token of
 * exportMalloc written as text, so whatever carries tokens between
 * processes (the simulated machine; the CUDA backend's token registry)
 * carries keys too, and aclrtMalloc creates its memory exportable for that.
 * Import maps the whole allocation (whole granules; size only has to lie
 * within it) and grants the current device read-write. Close in an importer
 * unmaps its oldest import of the key (CANN keeps a list per key and closes
 * its first); in the exporter it withdraws the key. An aclrtFree by the
 * exporter withdraws its keys with the memory; an importer's mapping keeps
 * the memory alive until it closes, so the memory goes when the last
 * holder lets go, never under a live mapping. Codes follow CANN's layers:
 * NULL pointers are the acl layer's ACL_ERROR_INVALID_PARAM; zero size or
 * len, unknown flags, num <= 0 and driver refusals (a short key buffer, an
 * address that is not the start of aclrtMalloc memory, an unknown key) are
 * ACL_ERROR_RT_PARAM_INVALID; no current device is ACL_ERROR_RT_CONTEXT_NULL;
 * an importer not whitelisted, a whitelist for a key exported without
 * validation, and a process importing its own key are
 * ACL_ERROR_RT_NO_PERMISSION (unsure for the last: the reference says
 * nothing). Unsure too: whether aclrtFree accepts an imported pointer (here
 * it refuses; aclrtIpcMemClose is the documented way). Across real
 * processes on the H200, over the CUDA backend's token registry, the
 * sharing scenario ipc-key passed every check
 * (conformance/results/h200-sharing.json).
 *
 * Note [ACL fabric handles]
 * ACL_MEM_SHARE_HANDLE_TYPE_FABRIC shares memory across servers of a
 * supernode; the simulated machine is one server, so the V2 calls answer
 * ACL_ERROR_RT_FEATURE_NOT_SUPPORT for it and work as the first versions for
 * ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT. The V2 prototypes here are
 * (handle, flags, shareType, *shareableHandle), (*shareableHandle,
 * shareType, pid, pidNum) and (*shareableHandle, shareType, flags, *handle),
 * as the 8.5 and 9.0 references give them.
 */

/**
 * Note [ACL reservation holdings]
 * aclrtMapMem refuses a handle whose device (or created/imported origin)
 * differs from what the reservation already holds. Finding that out by
 * walking the reservation's mappings costs O(mappings) per map (4,000 maps
 * into one reservation were 13x slower than CUDA's), so the flavour records
 * each reservation's holding when its first mapping is made: one WeakMap
 * lookup per map. The record is read only while core says the reservation
 * has mappings (Reservation.mappingCount > 0), so unmapping its last one
 * lifts the rule without any bookkeeping on unmap, and the next first
 * mapping writes a fresh record. Every mapping the flavour makes passed the
 * check, so all of a reservation's mappings share the recorded holding.
 */
interface Holding {
  readonly location: Location;
  readonly imported: boolean;
}

/** A refusal decided inside #run after core already acted (and was undone). */
class AclRefusal {
  constructor(readonly code: number) {}
}

/**
 * The alignment CANN asks of a user-chosen start (halMemAddressReserve): 1 GiB
 * past 512 MiB, else the size's power of two, never below the granularity
 * (Note [ACL expectPtr]).
 */
function expectPtrAlignment(size: number, granularity: number): number {
  if (size > 512 * MiB) return GiB;
  let align = granularity;
  while (align < size) align *= 2;
  return align;
}

/** aclrtMalloc's accounted size: up to a multiple of 32, plus the padding. */
export function aclMallocSize(size: number, padding: number = C.ACL_MALLOC_PADDING): number {
  return Math.ceil(size / C.ACL_MALLOC_ALIGN) * C.ACL_MALLOC_ALIGN + padding;
}

/** An IPC key is its token in text (Note [ACL IPC keys]): 20 characters, well inside the 64 a key may have. */
const IPC_KEY_PREFIX = 'ipc-';

function ipcKey(token: number): string {
  return `${IPC_KEY_PREFIX}${token.toString(16).padStart(16, '0')}`;
}

/** The token a key names, or undefined for a string no aclrtIpcMemGetExportKey wrote. */
function ipcToken(key: string): number | undefined {
  if (!/^ipc-[0-9a-f]{16}$/.test(key)) return undefined;
  const token = Number.parseInt(key.slice(IPC_KEY_PREFIX.length), 16);
  return Number.isSafeInteger(token) ? token : undefined;
}

function isNull(p: unknown): boolean {
  return p === null || p === undefined || p === 0 || p === 0n;
}

function isNullPointer(p: MemcpyPointer): boolean {
  return !isHostBuffer(p) && isNull(p);
}

function sameLocation(a: Location, b: Location): boolean {
  return a.type === b.type && a.id === b.id;
}

/** A process using Ascend ACL, on a simulated machine (default: one Ascend 910B). */
export function createAcl(options: AclOptions = {}): AclFlavor {
  return new AclFlavor(options);
}
