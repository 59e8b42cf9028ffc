import { describe, expect, it } from 'vitest';
import {
  type BreakContext,
  instrument,
  Tracer,
  type TraceSpan,
  type VendorLayers,
} from '../../src/core/trace.js';

/** A tree as indented "[layer] name(args)" lines. */
function outline(spans: readonly TraceSpan[], indent = ''): string[] {
  return spans.flatMap((s) => [
    `${indent}[${s.layer}] ${s.name}(${s.args.join(',')})${s.error ? ' !' : ''}`,
    ...outline(s.children, `${indent}  `),
  ]);
}

/** A three-layer stand-in for a flavor, core and a backend. */
class Lower {
  leaf(n: number): number {
    return n + 1;
  }
  boom(): never {
    throw new Error('lower failed');
  }
}
class Middle {
  constructor(readonly lower: Lower) {}
  step(n: number): number {
    return this.lower.leaf(n) * 2;
  }
  bad(): void {
    this.lower.boom();
  }
  /** Stands in for a Runtime: breakpoints find the state through describe and mappingsIn. */
  describe() {
    return { pid: 7, devices: [], reservations: [], allocations: [] };
  }
  mappingsIn() {
    return [];
  }
}
class Front {
  constructor(readonly middle: Middle) {}
  call(n: number, out: { value: number }): number {
    out.value = this.middle.step(n);
    return 0;
  }
  other(): number {
    return this.middle.step(1);
  }
  fails(): number {
    try {
      this.middle.bad();
    } catch {
      return 9;
    }
    return 0;
  }
}

const TABLE: VendorLayers = {
  vendor: 'V',
  api: 'api',
  steps: {
    'core:step': {
      path: [
        { layer: 'upper', name: 'ns::Upper::step' },
        { layer: 'upper', name: 'inner' },
      ],
      argsAt: 1,
      before: [{ layer: 'api', name: 'check' }],
      enter: [{ layer: 'upper', name: 'book' }],
      leave: [
        [
          { layer: 'upper', name: 'finish' },
          { layer: 'lower', name: 'finishDeep' },
        ],
      ],
      after: [{ layer: 'api', name: 'done' }],
    },
    'backend:leaf': { path: [{ layer: 'lower', name: 'drv_leaf' }] },
    // More specific: the same primitive under `other` has another name.
    'flavor:other > core:step > backend:leaf': { path: [{ layer: 'lower', name: 'drv_leaf_other' }] },
    'core:bad': { path: [] },
    'backend:boom': {
      path: [
        { layer: 'lower', name: 'drv_boom' },
        { layer: 'lower', name: 'drv_boom_inner' },
      ],
    },
  },
};

function make(layers: 'generic' | 'vendor', table: VendorLayers | null = TABLE) {
  const tracer = new Tracer({ layers });
  const lower = instrument(new Lower(), 'backend', tracer, ['leaf', 'boom']);
  const middle = instrument(new Middle(lower), 'core', tracer, ['step', 'bad']);
  const front = instrument(
    new Front(middle),
    'flavor',
    tracer,
    ['call', 'other', 'fails'],
    table ?? undefined,
  );
  return { tracer, front };
}

describe('vendor layers (Note [Vendor layers])', () => {
  it('a span becomes its path; bookkeeping goes beside it and inside its last frame; arguments where argsAt says', () => {
    const { tracer, front } = make('vendor');
    const out = { value: 0 };
    expect(front.call(3, out)).toBe(0);
    expect(out.value).toBe(8);
    expect(outline(tracer.roots)).toEqual([
      '[api] call(3,[object Object])',
      '  [api] check()',
      '  [upper] ns::Upper::step()',
      '    [upper] inner(3)',
      '      [upper] book()',
      '      [lower] drv_leaf(3)',
      '      [upper] finish()',
      '        [lower] finishDeep()',
      '  [api] done()',
    ]);
    const [root] = tracer.roots;
    expect(root.outs).toEqual([undefined, 8]);
    expect(root.result).toBe(0);
    const inner = root.children[1].children[0];
    expect(inner.result).toBe(8);
    expect(root.children[1].result).toBeUndefined();
  });

  it('the most specific call path wins', () => {
    const { tracer, front } = make('vendor');
    front.other();
    expect(outline(tracer.roots)).toContain('      [lower] drv_leaf_other(1)');
  });

  it('a failure marks every frame of the failing step, and a step left out hands its children up', () => {
    const { tracer, front } = make('vendor');
    expect(front.fails()).toBe(9);
    expect(outline(tracer.roots)).toEqual([
      '[api] fails()',
      '  [lower] drv_boom() !',
      '    [lower] drv_boom_inner() !',
    ]);
    expect(tracer.roots[0].children[0].error).toBe('lower failed');
  });

  it('generic layers ignore the table; a root without a table is generic in vendor mode too', () => {
    const generic = make('generic');
    generic.front.call(3, { value: 0 });
    expect(outline(generic.tracer.roots)).toEqual([
      '[flavor] call(3,[object Object])',
      '  [core] step(3)',
      '    [backend] leaf(3)',
    ]);
    const bare = make('vendor', null);
    bare.front.call(3, { value: 0 });
    expect(outline(bare.tracer.roots)).toEqual(outline(generic.tracer.roots));
    expect(() => new Tracer({ layers: 'other' as 'generic' })).toThrow(RangeError);
  });

  it('an opaque step hides what vmmkit does below it', () => {
    const table: VendorLayers = {
      ...TABLE,
      steps: { 'core:step': { path: [{ layer: 'upper', name: 'all' }], opaque: true } },
    };
    const { tracer, front } = make('vendor', table);
    front.call(1, { value: 0 });
    expect(outline(tracer.roots)).toEqual(['[api] call(1,[object Object])', '  [upper] all(1)']);
  });
});

describe('breakpoints (Note [Breakpoints])', () => {
  it('fire on the full name, the last part and layer:name, with the open path and the process state', () => {
    const { tracer, front } = make('vendor');
    const hits: string[] = [];
    const contexts: BreakContext[] = [];
    tracer.on('ns::Upper::step', (c) => {
      hits.push('full');
      contexts.push(c);
    });
    tracer.on('step', () => hits.push('short'));
    tracer.on('lower:drv_leaf', (c) => {
      hits.push('layer');
      contexts.push(c);
    });
    tracer.on('finishDeep', (c) => contexts.push(c));
    // Only whole names match: a name's tail past '::', never a cut of a plain name.
    tracer.on('rv_leaf', () => hits.push('cut'));
    tracer.on('Upper::step', () => hits.push('middle'));
    front.call(2, { value: 0 });
    expect(hits).toEqual(['full', 'short', 'layer']);
    expect(contexts[0].path.map((s) => s.name)).toEqual(['call', 'ns::Upper::step']);
    expect(contexts[1].path.map((s) => s.name)).toEqual(['call', 'ns::Upper::step', 'inner', 'drv_leaf']);
    expect(contexts[1].span.args).toEqual([2]);
    expect(contexts[1].vendor).toBe('V');
    expect(contexts[2].path.map((s) => s.name)).toEqual([
      'call',
      'ns::Upper::step',
      'inner',
      'finish',
      'finishDeep',
    ]);
    expect(contexts[1].describe()?.pid).toBe(7);
  });

  it('work in generic mode too; removing a listener stops it; a throwing listener leaves the call alone', () => {
    const { tracer, front } = make('generic');
    let n = 0;
    const off = tracer.on('leaf', (c) => {
      n++;
      // The flavor call's vendor is known in generic mode too (for the state's words).
      expect(c.vendor).toBe('V');
    });
    tracer.on('step', () => {
      throw new Error('listener bug');
    });
    expect(front.call(1, { value: 0 })).toBe(0);
    off();
    expect(front.call(1, { value: 0 })).toBe(0);
    expect(n).toBe(1);
    expect(tracer.listenerErrors.map((e) => (e as Error).message)).toEqual(['listener bug', 'listener bug']);
    expect(tracer.roots).toHaveLength(2);
  });

  it('describe is undefined where no traced object holds a runtime', () => {
    const tracer = new Tracer();
    const lower = instrument(new Lower(), 'backend', tracer, ['leaf']);
    let state: unknown = 'unset';
    tracer.on('leaf', (c) => {
      state = c.describe();
    });
    lower.leaf(1);
    expect(state).toBeUndefined();
  });
});
