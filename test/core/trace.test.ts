import { describe, expect, it } from 'vitest';
import { formatTrace, formatValue, instrument, Tracer, traceToJson } from '../../src/core/trace.js';

class Thing {
  a(x: bigint, buf: Uint8Array): number {
    return this.b({ value: 7 }) + buf.length + Number(x & 0n);
  }
  b(box: { value: number }): number {
    return box.value;
  }
  c(): void {
    throw new Error('broken');
  }
}

function traced(): { t: Thing; tracer: Tracer } {
  const tracer = new Tracer();
  const t = instrument(new Thing(), 'core', tracer, ['a', 'b', 'c', 'missing']);
  return { t, tracer };
}

describe('Tracer and instrument', () => {
  it('nests spans by call depth and records results and errors', () => {
    const { t, tracer } = traced();
    expect(t.a(0x7000_0000_0000n, new Uint8Array(5))).toBe(12);
    expect(() => t.c()).toThrow('broken');
    tracer.event('device', 'pte.set', [1, 2]);
    expect(tracer.roots.map((s) => s.name)).toEqual(['a', 'c', 'pte.set']);
    const [a, c, ev] = tracer.roots;
    expect(a.result).toBe(12);
    expect(a.children).toHaveLength(1);
    expect(a.children[0]).toMatchObject({ layer: 'core', name: 'b', result: 7 });
    expect(c.error).toBe('broken');
    expect(c.result).toBeUndefined();
    expect(ev).toMatchObject({ layer: 'device', name: 'pte.set', args: [1, 2], children: [] });
    for (const s of tracer.roots) expect(s.durationUs).toBeGreaterThanOrEqual(0);
    expect(a.start).toBeLessThanOrEqual(c.start);
    // Only the given instance is wrapped.
    expect(Object.hasOwn(t, 'a')).toBe(true);
    expect(Object.hasOwn(new Thing(), 'a')).toBe(false);
    tracer.clear();
    expect(tracer.roots).toEqual([]);
    t.b({ value: 1 });
    expect(tracer.roots).toHaveLength(1);
  });

  it('an error thrown from a nested call closes the inner spans so later spans are roots', () => {
    const tracer = new Tracer();
    const outer = tracer.begin('flavor', 'outer', []);
    tracer.begin('core', 'inner', []); // never ended
    tracer.fail(outer, new Error('x'));
    tracer.event('device', 'after', []);
    expect(tracer.roots.map((s) => s.name)).toEqual(['outer', 'after']);
    expect(outer.children.map((s) => s.name)).toEqual(['inner']);
    tracer.fail(tracer.begin('core', 'y', []), 'plain string');
    expect(tracer.roots[2].error).toBe('plain string');
  });
});

describe('formatTrace', () => {
  it('renders one indented line per span with hex addresses, boxes, buffers and outcomes', () => {
    const { t, tracer } = traced();
    t.a(0x7000_0000_0000n, new Uint8Array(5));
    expect(() => t.c()).toThrow();
    const text = formatTrace(tracer.roots);
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^\[core\] a\(0x700000000000, <5 bytes>\) -> 12 {2}\([\d.]+ us\)$/);
    expect(lines[1]).toMatch(/^ {2}\[core\] b\(&7\) -> 7 {2}\([\d.]+ us\)$/);
    expect(lines[2]).toMatch(/^\[core\] c\(\) ! broken {2}\([\d.]+ us\)$/);
    expect(formatTrace([])).toBe('');
  });

  it('formats values', () => {
    expect(formatValue(0x20_0000)).toBe('0x200000');
    expect(formatValue(65535)).toBe('65535');
    expect(formatValue(-1)).toBe('-1');
    expect(formatValue(1.5)).toBe('1.5');
    expect(formatValue(255n)).toBe('0xff');
    expect(formatValue([1, 0x10000n])).toBe('[1, 0x10000]');
    expect(formatValue({ value: 0x20_0000n })).toBe('&0x200000');
    expect(formatValue({ type: 1, location: { type: 1, id: 0 } })).toBe(
      '{ type: 1, location: { type: 1, id: 0 } }',
    );
    expect(formatValue(new Map())).toBe('Map');
    expect(formatValue(null)).toBe('null');
    expect(formatValue(undefined)).toBe('undefined');
    expect(formatValue('s')).toBe('s');
  });
});

describe('traceToJson', () => {
  it('gives plain JSON: bigints as hex, buffers as lengths, nested children, errors instead of results', () => {
    const { t, tracer } = traced();
    t.a(0x7000_0000_0000n, new Uint8Array(5));
    expect(() => t.c()).toThrow();
    const json = traceToJson(tracer.roots) as Record<string, unknown>[];
    // Survives a JSON round trip unchanged (no bigints left).
    expect(JSON.parse(JSON.stringify(json))).toEqual(json);
    expect(json).toHaveLength(2);
    expect(json[0]).toMatchObject({
      layer: 'core',
      name: 'a',
      args: ['0x700000000000', { bytes: 5 }],
      result: 12,
      children: [{ layer: 'core', name: 'b', args: [{ value: 7 }], result: 7, children: [] }],
    });
    expect(json[0]).not.toHaveProperty('error');
    expect(typeof json[0].startMs).toBe('number');
    expect(typeof json[0].durationUs).toBe('number');
    expect(json[1]).toMatchObject({ name: 'c', error: 'broken', children: [] });
    expect(json[1]).not.toHaveProperty('result');
    const nested = traceToJson([
      {
        layer: 'flavor',
        name: 'f',
        args: [[1n, 2n], new Set()],
        result: 3n,
        start: 0,
        durationUs: 1,
        children: [],
      },
    ]) as Record<string, unknown>[];
    expect(nested[0].args).toEqual([['0x1', '0x2'], 'Set']);
    expect(nested[0].result).toBe('0x3');
  });
});

describe('Tracer: truthful and bounded', () => {
  it('records a reused out-parameter box as it was at each call, and what each call wrote', () => {
    const tracer = new Tracer();
    const target = {
      n: 0,
      reserve(box: { value: number }) {
        box.value = 0x1000 * ++this.n;
        return 0;
      },
    };
    instrument(target, 'flavor', tracer, ['reserve']);
    const box = { value: 0 };
    target.reserve(box);
    target.reserve(box);
    const [first, second] = tracer.roots;
    expect(first.args).toEqual([{ value: 0 }]);
    expect(first.outs).toEqual([0x1000]);
    expect(second.args).toEqual([{ value: 0x1000 }]);
    expect(second.outs).toEqual([0x2000]);
    expect(formatTrace([first])).toMatch(/^\[flavor\] reserve\(&0 => 4096\) -> 0 /);
  });

  it('keeps only the newest spans under a limit, counting the dropped, oldest first', () => {
    const tracer = new Tracer({ limit: 3 });
    for (let i = 0; i < 7; i++) tracer.event('alloc', `e${i}`, [i]);
    expect(tracer.roots.map((s) => s.name)).toEqual(['e4', 'e5', 'e6']);
    expect(tracer.dropped).toBe(4);
    expect(() => new Tracer({ limit: 0 })).toThrow(RangeError);
  });

  it('streams finished top-level spans to a sink without keeping them', () => {
    const seen: string[] = [];
    const tracer = new Tracer({
      sink: (s) => seen.push(`${s.layer}:${s.name}:${s.children.length}`),
      keep: false,
    });
    const outer = tracer.begin('hip', 'hipMemMap', []);
    tracer.event('rocclr', 'virtualMap', []);
    tracer.end(outer, 0);
    tracer.event('device', 'pte.set', []);
    expect(seen).toEqual(['hip:hipMemMap:1', 'device:pte.set:0']);
    expect(tracer.roots).toEqual([]);
  });

  it('records an argument it cannot read instead of failing the call', () => {
    const tracer = new Tracer();
    const hostile = {
      get value(): number {
        throw new Error('no');
      },
    };
    const span = tracer.begin('flavor', 'f', [hostile, Proxy.revocable({}, {}).proxy]);
    tracer.end(span, 0);
    expect(tracer.roots).toHaveLength(1);
  });
});
