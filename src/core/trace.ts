/**
 * Call tracing through the layers (seed 1, sections 5 and 7): a flavor call
 * opens a span, the core operation it makes opens a child span, the backend
 * primitive a grandchild, and the simulated device records what it did (page
 * table entries, bytes moved) as events inside it.
 *
 * Note [Zero-cost tracing]: nothing checks a flag on the hot path. When a
 * tracer is given, `instrument` replaces an object's methods with wrapping
 * functions on that one instance; without one, the objects are untouched.
 */
import type { RuntimeDescription } from './runtime.js';

/**
 * The layer a span belongs to. Open: vmmkit's own are 'flavor', 'core',
 * 'backend' and 'device'; a flavor may name its vendor's layers (HIP's
 * 'hip' / 'rocclr' / 'rocr' / 'thunk') and an allocator its own ('alloc').
 */
export type Layer = string;

/**
 * Note [Vendor layers]: the generic tree ([flavor] hipMemMap -> [core] map ->
 * [backend] map -> [device] vm.bind) is vmmkit's own structure. A vendor's
 * engineer knows another: ROCm's hipMemMap -> roc::Device::virtualMap ->
 * hsa_amd_vmem_map. A flavor hands instrument its vendor's table
 * (src/flavors/<vendor>/layers.ts); a tracer made with `{ layers: 'vendor' }`
 * then translates every span opened under a root span of that flavor, at
 * begin time, so breakpoints (`on`) fire on the vendor's names. A span is
 * looked up by its generic call path, most specific first: the key of
 * `[backend] release` inside `[core] unmap` inside `[flavor] hipMemUnmap` is
 * tried as 'flavor:hipMemUnmap > core:unmap > backend:release', then
 * 'core:unmap > backend:release', then 'backend:release'. A span with no
 * entry keeps its generic layer and name. The generic tree stays the
 * default (existing traces, tests and tools read it).
 */

/** One frame of a vendor's stack. */
export interface VendorFrame {
  readonly layer: Layer;
  readonly name: string;
}

/** A leaf frame (bookkeeping with nothing below it), or a chain of frames each called by the one before. */
export type VendorLeaf = VendorFrame | readonly VendorFrame[];

/** What one generic span becomes in a vendor's stack. */
export interface VendorStep {
  /**
   * The frames the span becomes, outermost first, each calling the next; the
   * span's own children go inside the last. Empty: vmmkit's span has no
   * counterpart in the vendor's stack; its children take its place.
   */
  readonly path: readonly VendorFrame[];
  /** Which frame of `path` shows the arguments, outs and result (default 0, the outermost). */
  readonly argsAt?: number;
  /** Frames inside the last frame, before and after (on success) the span's own children. */
  readonly enter?: readonly VendorLeaf[];
  readonly leave?: readonly VendorLeaf[];
  /** Frames beside the span in its parent, just before it and (on success) just after it. */
  readonly before?: readonly VendorLeaf[];
  readonly after?: readonly VendorLeaf[];
  /** The vendor does all of it in these frames: vmmkit's spans below are not shown (nor break). */
  readonly opaque?: boolean;
}

/** A vendor's layer table: the layer of its API calls, and each generic span's translation (Note [Vendor layers]). */
export interface VendorLayers {
  readonly vendor: string;
  /** The layer the flavor's own calls show as (HIP's 'hip'). */
  readonly api: Layer;
  /** Keyed by generic call path suffixes: 'layer:name', or 'parentLayer:parentName > layer:name', ... */
  readonly steps: Readonly<Record<string, VendorStep>>;
}

/** What a breakpoint listener is given (Note [Breakpoints]). */
export interface BreakContext {
  /** The span just opened (arguments recorded; no result yet). */
  readonly span: TraceSpan;
  /** The open frames from the root down to `span`. */
  readonly path: readonly TraceSpan[];
  /** The vendor of the flavor call the span runs under ('HIP', 'CUDA', 'ACL'), in either layer mode. */
  readonly vendor: string | undefined;
  /** The state of the process the call runs in (`Runtime.describe()`), as it is now. */
  describe(): RuntimeDescription | undefined;
}

export interface TraceSpan {
  readonly layer: Layer;
  readonly name: string;
  /** The arguments as they were at the call (out-parameter boxes copied, not shared). */
  readonly args: readonly unknown[];
  /** For each out-parameter box `{ value }` the call wrote: its value when the call returned. */
  outs?: readonly unknown[];
  /** What the call returned (for flavors, the numeric code), or the error's message. */
  result?: unknown;
  error?: string;
  /** Start, in ms since the tracer was made. */
  readonly start: number;
  durationUs: number;
  readonly children: TraceSpan[];
}

export interface TracerOptions {
  /**
   * Keep at most this many top-level spans (the oldest go first; `dropped`
   * counts them), so a long run's memory stays bounded. Default: no limit.
   */
  readonly limit?: number;
  /** Called with each top-level span once it closes (a streaming sink: write it out, then forget it). */
  readonly sink?: (span: TraceSpan) => void;
  /** Keep closed top-level spans in `roots` (default true; false with a sink streams without keeping). */
  readonly keep?: boolean;
  /**
   * 'vendor' (default): a front end's calls trace down its vendor's own stack
   * (Note [Vendor layers]); 'generic': vmmkit's layers (flavor, core, backend,
   * device). Spans with no front end above them are generic either way.
   */
  readonly layers?: 'generic' | 'vendor';
}

/**
 * An open span and the live arguments whose boxes are read when it closes.
 * In generic mode `frames` is just `span`; translated, it is the vendor's
 * path (empty when the span has no counterpart), `carrier` the frame that
 * shows the arguments, and `container` where the children go (undefined
 * below an opaque step: they are recorded nowhere).
 */
interface OpenSpan {
  readonly span: TraceSpan;
  readonly live: readonly unknown[];
  readonly carrier: TraceSpan;
  readonly frames: readonly TraceSpan[];
  readonly container: TraceSpan[] | undefined;
  /** The generic keys from the root down ('flavor:hipMemMap', 'core:map', ...). */
  readonly keys: readonly string[];
  readonly vendor: VendorLayers | undefined;
  /** The vendor of the flavor call at the root, in either mode (breakpoints say it). */
  readonly named: string | undefined;
  readonly step: VendorStep | undefined;
  /** The object whose method opened the span (a flavor, a Runtime, a backend). */
  readonly target: unknown;
}

type Listener = (context: BreakContext) => void;

/** Listener errors kept, so a listener that always throws cannot grow memory without bound. */
const MAX_LISTENER_ERRORS = 100;

export class Tracer {
  readonly #roots: TraceSpan[] = [];
  /** Index of the oldest kept root when `limit` is set (a ring over #roots). */
  #head = 0;
  #dropped = 0;
  readonly #stack: OpenSpan[] = [];
  readonly #origin = performance.now();
  readonly #limit: number;
  readonly #sink: ((span: TraceSpan) => void) | undefined;
  readonly #keep: boolean;
  readonly #vendorLayers: boolean;
  readonly #listeners = new Map<string, Listener[]>();
  readonly #listenerErrors: unknown[] = [];

  constructor(options: TracerOptions = {}) {
    const { limit = Number.POSITIVE_INFINITY, sink, keep = true, layers = 'vendor' } = options;
    if (!(limit >= 1)) throw new RangeError(`a tracer keeps at least one span, not ${limit}`);
    if (layers !== 'generic' && layers !== 'vendor')
      throw new RangeError(`layers are 'generic' or 'vendor', not ${String(layers)}`);
    this.#limit = limit;
    this.#sink = sink;
    this.#keep = keep;
    this.#vendorLayers = layers === 'vendor';
  }

  /** Which layers spans are named in ('generic' or 'vendor'). */
  get layers(): 'generic' | 'vendor' {
    return this.#vendorLayers ? 'vendor' : 'generic';
  }

  /**
   * Note [Breakpoints]: call `listener` each time a span or vendor frame
   * named `name` opens: the full name ('roc::Device::virtualMap'), its last
   * part ('virtualMap'), or 'layer:name'. It runs before the call does its
   * work, so `describe()` shows the state before it. That state is core's
   * books, which core updates once a step's backend work succeeded: inside
   * one call over several mappings (an unmap of two chunks) the books still
   * show every chunk until the call ends. A listener that throws does not
   * disturb the traced call: the error is kept in listenerErrors (the first
   * hundred). Returns a function that removes the listener.
   */
  on(name: string, listener: (context: BreakContext) => void): () => void {
    const list = this.#listeners.get(name) ?? [];
    list.push(listener);
    this.#listeners.set(name, list);
    return () => {
      const i = list.indexOf(listener);
      if (i >= 0) list.splice(i, 1);
      if (list.length === 0) this.#listeners.delete(name);
    };
  }

  /** Errors thrown by breakpoint listeners, oldest first. */
  get listenerErrors(): readonly unknown[] {
    return this.#listenerErrors;
  }

  /** The kept top-level spans, oldest first. */
  get roots(): TraceSpan[] {
    return this.#head === 0
      ? this.#roots
      : [...this.#roots.slice(this.#head), ...this.#roots.slice(0, this.#head)];
  }

  /** Top-level spans let go because of `limit`. */
  get dropped(): number {
    return this.#dropped;
  }

  /**
   * Open a span as a child of the innermost open one. `target` is the object
   * whose method is traced (breakpoints find the process through it);
   * `layers` is the vendor table of a flavor's calls (Note [Vendor layers]).
   */
  begin(
    layer: Layer,
    name: string,
    args: readonly unknown[],
    target?: unknown,
    layers?: VendorLayers,
  ): TraceSpan {
    const parent = this.#stack[this.#stack.length - 1];
    const copied = args.map(atCall);
    const vendor = this.#vendorLayers ? (parent ? parent.vendor : layers) : undefined;
    if (vendor === undefined) {
      const span = this.#span(layer, name, copied);
      if (parent) parent.container?.push(span);
      this.#push({
        span,
        live: args,
        carrier: span,
        frames: [span],
        container: parent === undefined || parent.container ? span.children : undefined,
        keys: [],
        vendor: undefined,
        named: parent ? parent.named : layers?.vendor,
        step: undefined,
        target,
      });
      return span;
    }
    return this.#beginVendor(layer, name, args, copied, target, vendor, parent);
  }

  #beginVendor(
    layer: Layer,
    name: string,
    live: readonly unknown[],
    copied: unknown[],
    target: unknown,
    vendor: VendorLayers,
    parent: OpenSpan | undefined,
  ): TraceSpan {
    const key = `${layer}:${name}`;
    const keys = parent ? [...parent.keys, key] : [key];
    const hidden = parent !== undefined && parent.container === undefined;
    let step = hidden ? undefined : lookup(vendor, keys);
    if (step === undefined && !hidden)
      step = { path: [{ layer: layer === 'flavor' ? vendor.api : layer, name }] };
    // An elided span needs a parent to hand its children to.
    if (step !== undefined && step.path.length === 0 && parent === undefined)
      step = { ...step, path: [{ layer, name }] };
    const container = parent?.container;
    if (step?.before && container) this.#leaves(step.before, container);
    const frames: TraceSpan[] = [];
    const at = step?.argsAt ?? 0;
    for (const [i, f] of (step?.path ?? [{ layer, name }]).entries()) {
      const span = this.#span(f.layer, f.name, i === at ? copied : []);
      (i === 0 ? container : frames[i - 1].children)?.push(span);
      frames.push(span);
    }
    const last = frames[frames.length - 1];
    const entry: OpenSpan = {
      span: frames[0] ?? this.#span(layer, name, copied),
      live,
      carrier: frames[Math.min(at, frames.length - 1)] ?? this.#span(layer, name, copied),
      frames,
      container: hidden || step?.opaque ? undefined : last ? last.children : container,
      keys,
      vendor,
      named: vendor.vendor,
      step,
      target,
    };
    this.#push(entry);
    if (!hidden) for (const f of frames) this.#fire(f);
    if (step?.enter && last) this.#leaves(step.enter, last.children);
    return entry.span;
  }

  #span(layer: Layer, name: string, args: unknown[]): TraceSpan {
    return { layer, name, args, start: performance.now() - this.#origin, durationUs: 0, children: [] };
  }

  #push(entry: OpenSpan): void {
    this.#stack.push(entry);
    if (this.#listeners.size > 0 && entry.vendor === undefined) this.#fire(entry.span);
  }

  /** Record leaf frames (and chains) into `into`, each one breakable. */
  #leaves(leaves: readonly VendorLeaf[], into: TraceSpan[]): void {
    for (const leaf of leaves) {
      const chain: readonly VendorFrame[] = isChain(leaf) ? leaf : [leaf];
      let list = into;
      const made: TraceSpan[] = [];
      for (const f of chain) {
        const span = this.#span(f.layer, f.name, []);
        list.push(span);
        made.push(span);
        list = span.children;
      }
      for (let i = 0; i < made.length; i++) this.#fire(made[i], made.slice(0, i));
    }
  }

  /** Call the listeners of `span`'s names; `extra` are leaf frames above it that are not on the stack. */
  #fire(span: TraceSpan, extra: readonly TraceSpan[] = []): void {
    if (this.#listeners.size === 0) return;
    const cut = span.name.lastIndexOf('::');
    const full = this.#listeners.get(span.name);
    const short = cut >= 0 ? this.#listeners.get(span.name.slice(cut + 2)) : undefined;
    const layered = this.#listeners.get(`${span.layer}:${span.name}`);
    if (full === undefined && short === undefined && layered === undefined) return;
    const listeners = [...(full ?? []), ...(short ?? []), ...(layered ?? [])];
    const stack = [...this.#stack];
    const path: TraceSpan[] = [];
    outer: for (const e of stack) {
      for (const f of e.frames) {
        path.push(f);
        if (f === span) break outer;
      }
    }
    if (path[path.length - 1] !== span) path.push(...extra, span);
    const context: BreakContext = {
      span,
      path,
      vendor: stack[0]?.named,
      describe: () => describeProcess(stack),
    };
    for (const l of listeners) {
      try {
        l(context);
      } catch (e) {
        if (this.#listenerErrors.length < MAX_LISTENER_ERRORS) this.#listenerErrors.push(e);
      }
    }
  }

  end(span: TraceSpan, result: unknown): void {
    this.#close(span, { result: atCall(result) });
  }

  fail(span: TraceSpan, error: unknown): void {
    this.#close(span, { error: error instanceof Error ? error.message : String(error) });
  }

  /** A leaf record inside the current span (a page-table update, a copy). */
  event(layer: Layer, name: string, args: readonly unknown[]): void {
    this.end(this.begin(layer, name, args), undefined);
  }

  #close(span: TraceSpan, outcome: { result?: unknown; error?: string }): void {
    // Pop back to the span (a throw that skipped an end leaves deeper spans open).
    let i = this.#stack.length - 1;
    while (i >= 0 && this.#stack[i].span !== span) i--;
    if (i < 0) {
      // Not open (closed already): record the outcome on it, as before.
      if (outcome.error !== undefined) span.error = outcome.error;
      else span.result = outcome.result;
      span.durationUs = this.#since(span);
      return;
    }
    const entry = this.#stack[i];
    const { live, carrier, step } = entry;
    if (outcome.error !== undefined) for (const f of entry.frames) f.error = outcome.error;
    else carrier.result = outcome.result;
    if (entry.frames.length === 0) {
      if (outcome.error !== undefined) span.error = outcome.error;
      else span.result = outcome.result;
    }
    let outs: unknown[] | undefined;
    for (let k = 0; k < live.length; k++) {
      if (!isBox(live[k])) continue;
      const after = readBox(live[k]);
      // Only what the call wrote: an input box read and left alone shows once.
      if (Object.is(after, (carrier.args[k] as { value?: unknown }).value)) continue;
      (outs ??= new Array(live.length).fill(undefined))[k] = atCall(after);
    }
    if (outs) carrier.outs = outs;
    this.#stack.length = i + 1;
    if (step !== undefined && outcome.error === undefined) {
      const last = entry.frames[entry.frames.length - 1];
      if (step.leave && last) this.#leaves(step.leave, last.children);
      const container = this.#stack[i - 1]?.container;
      if (step.after && container) this.#leaves(step.after, container);
    }
    for (const f of entry.frames) f.durationUs = this.#since(f);
    span.durationUs = this.#since(span);
    this.#stack.length = i;
    if (i === 0) this.#closeRoot(span);
  }

  #since(span: TraceSpan): number {
    return Math.round((performance.now() - this.#origin - span.start) * 1000 * 10) / 10;
  }

  #closeRoot(span: TraceSpan): void {
    this.#sink?.(span);
    if (!this.#keep) return;
    if (this.#roots.length < this.#limit) {
      this.#roots.push(span);
      return;
    }
    this.#roots[this.#head] = span;
    this.#head = (this.#head + 1) % this.#roots.length;
    this.#dropped++;
  }

  clear(): void {
    this.#roots.length = 0;
    this.#head = 0;
    this.#dropped = 0;
    this.#stack.length = 0;
  }
}

/** The most specific step for a generic call path (Note [Vendor layers]). */
function lookup(vendor: VendorLayers, keys: readonly string[]): VendorStep | undefined {
  for (let i = 0; i < keys.length; i++) {
    const step = vendor.steps[keys.slice(i).join(' > ')];
    if (step !== undefined) return step;
  }
  return undefined;
}

function isChain(leaf: VendorLeaf): leaf is readonly VendorFrame[] {
  return Array.isArray(leaf);
}

/**
 * The state of the process a call runs in: the first traced object on the
 * open path that is a Runtime (it has describe and mappingsIn) or holds one
 * (a flavor's `runtime`).
 */
function describeProcess(stack: readonly OpenSpan[]): RuntimeDescription | undefined {
  for (const { target } of stack) {
    const t = target as { runtime?: unknown; describe?: unknown; mappingsIn?: unknown } | undefined;
    if (t === null || typeof t !== 'object') continue;
    const rt = (isRuntime(t.runtime) ? t.runtime : isRuntime(t) ? t : undefined) as
      | { describe(): RuntimeDescription }
      | undefined;
    if (rt !== undefined) return rt.describe();
  }
  return undefined;
}

function isRuntime(v: unknown): boolean {
  const r = v as { describe?: unknown; mappingsIn?: unknown } | null | undefined;
  return (
    r !== null &&
    typeof r === 'object' &&
    typeof r.describe === 'function' &&
    typeof r.mappingsIn === 'function'
  );
}

/**
 * A value as it was at the moment of the call: out-parameter boxes and the
 * caller's plain structs and arrays are copied (the caller may reuse them),
 * host buffers and core objects are kept by reference (only their length or
 * class is shown). A value that cannot be read (a throwing getter, a revoked
 * proxy) is recorded as such rather than failing the call.
 */
function atCall(v: unknown, depth = 0): unknown {
  if (v === null || typeof v !== 'object') return v;
  try {
    if (ArrayBuffer.isView(v)) return v;
    if (Array.isArray(v)) return depth > 3 ? '[...]' : v.map((x) => atCall(x, depth + 1));
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) return v;
    if (depth > 3) return '{...}';
    const copy: Record<string, unknown> = {};
    for (const k of Object.keys(v)) copy[k] = atCall((v as Record<string, unknown>)[k], depth + 1);
    return copy;
  } catch {
    return '<unreadable>';
  }
}

function isBox(v: unknown): boolean {
  try {
    return (
      v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype && 'value' in v
    );
  } catch {
    return false;
  }
}

function readBox(v: unknown): unknown {
  try {
    return (v as { value: unknown }).value;
  } catch {
    return '<unreadable>';
  }
}

/**
 * Wrap the named methods of `target` (own or inherited) so each call opens a
 * span on `tracer`. Only the given instance changes.
 */
export function instrument<T extends object>(
  target: T,
  layer: Layer,
  tracer: Tracer,
  names: readonly string[],
  /** A flavor's vendor table (Note [Vendor layers]). */
  layers?: VendorLayers,
): T {
  const methods = target as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const name of names) {
    const method = methods[name];
    if (typeof method !== 'function') continue;
    methods[name] = function traced(this: unknown, ...args: unknown[]) {
      const span = tracer.begin(layer, name, args, this, layers);
      try {
        const result = method.apply(this, args);
        tracer.end(span, result);
        return result;
      } catch (e) {
        tracer.fail(span, e);
        throw e;
      }
    };
  }
  return target;
}

/** Render spans as an indented tree, one call per line. */
export function formatTrace(spans: readonly TraceSpan[], indent = ''): string {
  let out = '';
  for (const s of spans) {
    const args = s.args
      .map((a, i) =>
        s.outs?.[i] !== undefined ? `${formatValue(a)} => ${formatValue(s.outs[i])}` : formatValue(a),
      )
      .join(', ');
    const outcome =
      s.error !== undefined ? `! ${s.error}` : s.result === undefined ? '' : `-> ${formatValue(s.result)}`;
    out += `${indent}[${s.layer}] ${s.name}(${args}) ${outcome}  (${s.durationUs} us)\n`;
    out += formatTrace(s.children, `${indent}  `);
  }
  return out;
}

export function formatValue(v: unknown): string {
  if (typeof v === 'bigint') return `0x${v.toString(16)}`;
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0x10000 ? `0x${v.toString(16)}` : String(v);
  if (v instanceof Uint8Array) return `<${v.length} bytes>`;
  if (Array.isArray(v)) return `[${v.map(formatValue).join(', ')}]`;
  if (v !== null && typeof v === 'object') {
    if ('value' in v && Object.keys(v).length === 1)
      return `&${formatValue((v as { value: unknown }).value)}`;
    const ctor = (v as object).constructor?.name;
    if (ctor && ctor !== 'Object') return ctor;
    return `{ ${Object.entries(v)
      .map(([k, x]) => `${k}: ${formatValue(x)}`)
      .join(', ')} }`;
  }
  return String(v);
}

/** Spans as plain JSON (bigints as hex strings, byte buffers as lengths). */
export function traceToJson(spans: readonly TraceSpan[]): unknown {
  return spans.map((s) => ({
    layer: s.layer,
    name: s.name,
    args: s.args.map(jsonValue),
    ...(s.outs !== undefined ? { outs: s.outs.map(jsonValue) } : {}),
    ...(s.error !== undefined ? { error: s.error } : { result: jsonValue(s.result) }),
    startMs: Math.round(s.start * 1000) / 1000,
    durationUs: s.durationUs,
    children: traceToJson(s.children),
  }));
}

function jsonValue(v: unknown): unknown {
  if (typeof v === 'bigint') return `0x${v.toString(16)}`;
  if (v instanceof Uint8Array) return { bytes: v.length };
  if (Array.isArray(v)) return v.map(jsonValue);
  if (v !== null && typeof v === 'object') {
    const ctor = (v as object).constructor?.name;
    if (ctor && ctor !== 'Object') return ctor;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, jsonValue(x)]));
  }
  return v;
}
