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
