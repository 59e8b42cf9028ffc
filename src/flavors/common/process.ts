// The declarations name Disposable: they bring its lib (Note [Declarations a user compiles] in src/index.ts).
/// <reference lib="esnext.disposable" preserve="true" />
import { vmmError } from '../../core/errors.js';
import type { Runtime } from '../../core/runtime.js';
import { instrument, type Tracer, type VendorLayers } from '../../core/trace.js';
import { toCount } from './args.js';
import { type ErrorTable, VendorCodes } from './error-table.js';
import { hostBytes } from './untrusted.js';

/**
 * What a front end is built on: one process (a Runtime over a backend) that
 * the composition root made. A flavor never makes its process, nor sees a
 * backend: the package's createCuda / createHip / createAcl (src/entry) make
 * the process with src/compose and hand it to the flavor's constructor, and
 * so may any caller holding a runtime (`new HipFlavor({ runtime })`).
 * `M` is the machine's type where the caller knows it (the simulated
 * Machine, from the entry); the flavor only hands it back.
 */
export interface FlavorProcess<M = unknown> {
  readonly runtime: Runtime;
  /** The simulated machine the process runs on; undefined on real hardware or a caller's backend. */
  readonly machine?: M;
  /** Where internal problems go (never thrown out of a vendor call); default: reportOneLine. */
  readonly report?: (message: string, error?: unknown) => void;
  /** Trace every call of the front end through its vendor's layers (the tracer the process's backend reports to). */
  readonly tracer?: Tracer;
}

/** How a vendor spells success, failure it cannot name, and each core error kind (each vendor's error-table.ts). */
export interface VendorErrors {
  readonly vendor: string;
  readonly table: ErrorTable;
  readonly success: number;
  readonly unknown: number;
  /** The vendor's error factory, where it keeps more than VendorCodes does (ACL's messages). */
  readonly codes?: typeof VendorCodes;
}

/** A vendor's VendorErrors, in one line of its error-table.ts. */
export function vendorErrors(
  vendor: string,
  table: ErrorTable,
  success: number,
  unknown: number,
  codes?: typeof VendorCodes,
): VendorErrors {
  return { vendor, table, success, unknown, codes };
}

/**
 * What every front end is: one process (a Runtime over a backend) speaking a
 * vendor's language. The vendor classes add the C-shaped calls.
 */
export abstract class VendorProcess<M = unknown> implements Disposable {
  /** Whose language this process speaks: 'CUDA', 'HIP' or 'ACL' (its words in `inspect`, its trace layers). */
  readonly vendor: string;
  readonly runtime: Runtime;
  /** The simulated machine this process runs on (undefined on real hardware or a caller's backend). */
  readonly machine: M | undefined;
  /** Where internal problems go (never thrown out of a vendor call). */
  protected readonly report: (message: string, error?: unknown) => void;
  /** The vendor's error factory. */
  protected readonly codes: VendorCodes;

  constructor(process: FlavorProcess<M>, errors: VendorErrors) {
    const report = process.report ?? reportOneLine;
    this.vendor = errors.vendor;
    this.runtime = process.runtime;
    this.machine = process.machine;
    this.report = report;
    const Codes = errors.codes ?? VendorCodes;
    this.codes = new Codes(errors.table, errors.success, errors.unknown, errors.vendor, report);
  }

  /**
   * When the options give a tracer, trace every call of `names` (and
   * dispose) through the vendor's layers for this process's backend (Note
   * [Vendor layers] in core/trace.ts). The last step of a front end's
   * constructor, so the tracer sees each call as the caller made it.
   */
  protected traceCalls(
    tracer: Tracer | undefined,
    names: readonly string[],
    layers: (backend: Runtime['backend']['kind']) => VendorLayers,
  ): void {
    if (tracer) instrument(this, 'flavor', tracer, [...names, 'dispose'], layers(this.runtime.backend.kind));
  }

  /** This process's pid on its machine. */
  get pid(): number {
    return this.runtime.pid;
  }

  /** The last unexpected internal error (a vmmkit bug), for debugging; the call answered it with the vendor's unknown code. */
  get lastInternalError(): unknown {
    return this.codes.lastInternalError;
  }

  /**
   * POSIX close(2) on this process's fd table: how a program gives back a
   * descriptor from an export or an import once the memory is imported (the
   * memory itself stays until its handles and mappings let go). 0, or -1 for
   * a descriptor that is not open (EBADF) or a process that has ended. Never throws.
   */
  close(fd: unknown): number {
    if (typeof fd !== 'number' || !Number.isInteger(fd) || fd < 0) return -1;
    try {
      this.runtime.closeFd(fd);
      return 0;
    } catch {
      return -1;
    }
  }

  /**
   * What a C program does by dereferencing a pointer into host-located VMM
   * memory whose CPU access it granted (a HOST location in the vendor's set
   * access call; Note [Host access] in src/backend/backend.ts): a CPU load
   * of dst.length bytes at `ptr`, or a store of src. JavaScript cannot
   * dereference an address, so vmmkit offers these two; where C would fault
   * (memory not mapped, device memory, no CPU grant) they answer the vendor's
   * code for the refusal, and a bad pointer or buffer its invalid-value code.
   */
  hostRead(ptr: unknown, dst: unknown): number {
    return this.#cpu(ptr, dst, (va, bytes) => this.runtime.hostRead(va, bytes));
  }

  /** The store of hostRead's Note: src's bytes at `ptr`, by the CPU. */
  hostWrite(ptr: unknown, src: unknown): number {
    return this.#cpu(ptr, src, (va, bytes) => this.runtime.hostWrite(va, bytes));
  }

  /** A CPU access of the caller's buffer at the caller's pointer, both checked first, as a vendor code. */
  #cpu(ptr: unknown, buffer: unknown, access: (va: number, bytes: Uint8Array) => void): number {
    const va = toCount(ptr ?? 0);
    const bytes = hostBytes(buffer);
    if (va <= 0 || bytes === undefined)
      return this.codes.code(vmmError('invalid-value', 'bad pointer or buffer'));
    return this.codes.run(() => access(va, bytes));
  }

  /** End the process: everything it holds is released, as at exit. Never throws. */
  dispose(): void {
    this.runtime.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/**
 * The report hook a front end uses when the caller gives none: one line per
 * problem on stderr (console.warn), the error's name and first message line
 * included, its stack only when the environment variable VMMKIT_STACKS is set
 * (to anything but '' or '0'). A vendor call already answered the problem
 * with a code; the line is for whoever reads the log, not a crash report.
 */
export function reportOneLine(message: string, error?: unknown): void {
  const stacks = stacksWanted();
  let line = `vmmkit: ${message}`;
  if (error instanceof Error) {
    line += `: ${error.name}: ${firstLine(error.message)}`;
    if (stacks && error.stack !== undefined) line += `\n${error.stack}`;
  } else if (error !== undefined) {
    line += `: ${typeof error === 'string' ? firstLine(error) : typeof error}`;
  }
  console.warn(line);
}

function firstLine(text: string): string {
  const i = text.indexOf('\n');
  return i < 0 ? text : text.slice(0, i);
}

function stacksWanted(): boolean {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const v = env?.VMMKIT_STACKS;
  return v !== undefined && v !== '' && v !== '0';
}
