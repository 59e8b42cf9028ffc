/**
 * Call tracing through the layers (seed 1, sections 5 and 7): a flavour call
 * opens a span, the core operation it makes opens a child span, the backend
 * primitive a grandchild, and the simulated device records what it did (page
 * table entries, bytes moved) as events inside it.
 *
 * Note [Zero-cost tracing]: nothing checks a flag on the hot path. When a
 * tracer is given, `instrument` replaces an object's methods with wrapping
 * functions on that one instance; without one, the objects are untouched.
 */

/**
 * The layer a span belongs to. Open: vmmkit's own are 'flavor', 'core',
 * 'backend' and 'device'; a flavour may name its vendor's layers (HIP's
 * 'hip' / 'rocclr' / 'rocr' / 'thunk') and an allocator its own ('alloc').
 */
export type Layer = string;

export interface TraceSpan {
  readonly layer: Layer;
  readonly name: string;
  /** The arguments as they were at the call (out-parameter boxes copied, not shared). */
  readonly args: readonly unknown[];
  /** For each out-parameter box `{ value }` the call wrote: its value when the call returned. */
  outs?: readonly unknown[];
  /** What the call returned (for flavours, the numeric code), or the error's message. */
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
}

/** An open span and the live arguments whose boxes are read when it closes. */
interface OpenSpan {
  readonly span: TraceSpan;
  readonly live: readonly unknown[];
}

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

  constructor(options: TracerOptions = {}) {
    const { limit = Number.POSITIVE_INFINITY, sink, keep = true } = options;
    if (!(limit >= 1)) throw new RangeError(`a tracer keeps at least one span, not ${limit}`);
    this.#limit = limit;
    this.#sink = sink;
    this.#keep = keep;
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

  /** Open a span as a child of the innermost open one. */
  begin(layer: Layer, name: string, args: readonly unknown[]): TraceSpan {
    const span: TraceSpan = {
      layer,
      name,
      args: args.map(atCall),
      start: performance.now() - this.#origin,
      durationUs: 0,
      children: [],
    };
    const parent = this.#stack[this.#stack.length - 1];
    if (parent) parent.span.children.push(span);
    this.#stack.push({ span, live: args });
    return span;
  }

  end(span: TraceSpan, result: unknown): void {
    span.result = atCall(result);
    this.#close(span);
  }

  fail(span: TraceSpan, error: unknown): void {
    span.error = error instanceof Error ? error.message : String(error);
    this.#close(span);
  }

  /** A leaf record inside the current span (a page-table update, a copy). */
  event(layer: Layer, name: string, args: readonly unknown[]): void {
    this.end(this.begin(layer, name, args), undefined);
  }

  #close(span: TraceSpan): void {
    span.durationUs = Math.round((performance.now() - this.#origin - span.start) * 1000 * 10) / 10;
    // Pop back to the span (a throw that skipped an end leaves deeper spans open).
    let i = this.#stack.length - 1;
    while (i >= 0 && this.#stack[i].span !== span) i--;
    if (i < 0) return;
    const { live } = this.#stack[i];
    let outs: unknown[] | undefined;
    for (let k = 0; k < live.length; k++) {
      if (!isBox(live[k])) continue;
      const after = readBox(live[k]);
      // Only what the call wrote: an input box read and left alone shows once.
      if (Object.is(after, (span.args[k] as { value?: unknown }).value)) continue;
      (outs ??= new Array(live.length).fill(undefined))[k] = atCall(after);
    }
    if (outs) span.outs = outs;
    this.#stack.length = i;
    if (i === 0) this.#closeRoot(span);
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
): T {
  const methods = target as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const name of names) {
    const method = methods[name];
    if (typeof method !== 'function') continue;
    methods[name] = function traced(this: unknown, ...args: unknown[]) {
      const span = tracer.begin(layer, name, args);
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

/** The string-named methods of T. */
export type MethodNames<T> = {
  [K in Extract<keyof T, string>]: T[K] extends (...args: never[]) => unknown ? K : never;
}[Extract<keyof T, string>];

/**
 * `true` when every method of T is in Listed; otherwise a type naming the
 * missing ones, so `const ok: MethodsListed<T, L> = true` fails to compile
 * until a new method is traced or declared a query.
 */
export type MethodsListed<T, Listed> = [Exclude<MethodNames<T>, Listed>] extends [never]
  ? true
  : { readonly missing: Exclude<MethodNames<T>, Listed> };

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
