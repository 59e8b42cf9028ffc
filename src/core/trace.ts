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

export type Layer = 'flavor' | 'core' | 'backend' | 'device';

export interface TraceSpan {
  readonly layer: Layer;
  readonly name: string;
  readonly args: readonly unknown[];
  /** What the call returned (for flavours, the numeric code), or the error's message. */
  result?: unknown;
  error?: string;
  /** Start, in ms since the tracer was made. */
  readonly start: number;
  durationUs: number;
  readonly children: TraceSpan[];
}

export class Tracer {
  readonly roots: TraceSpan[] = [];
  readonly #stack: TraceSpan[] = [];
  readonly #origin = performance.now();

  /** Open a span as a child of the innermost open one. */
  begin(layer: Layer, name: string, args: readonly unknown[]): TraceSpan {
    const span: TraceSpan = {
      layer,
      name,
      args,
      start: performance.now() - this.#origin,
      durationUs: 0,
      children: [],
    };
    const parent = this.#stack[this.#stack.length - 1];
    (parent ? parent.children : this.roots).push(span);
    this.#stack.push(span);
    return span;
  }

  end(span: TraceSpan, result: unknown): void {
    span.result = result;
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
    const i = this.#stack.lastIndexOf(span);
    if (i >= 0) this.#stack.length = i;
  }

  clear(): void {
    this.roots.length = 0;
    this.#stack.length = 0;
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

/** Render spans as an indented tree, one call per line. */
export function formatTrace(spans: readonly TraceSpan[], indent = ''): string {
  let out = '';
  for (const s of spans) {
    const args = s.args.map(formatValue).join(', ');
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
