import { describe, expect, it } from 'vitest';
import type { RuntimeDescription } from '../../src/core/runtime.js';
import { Access } from '../../src/core/types.js';
import { layoutMap } from '../../src/report/address-map.js';

const MiB = 1024 ** 2;
const device = {
  ordinal: 0,
  name: 'H200',
  totalMemory: 1 << 30,
  minimumGranularity: 2 * MiB,
  recommendedGranularity: 2 * MiB,
};

/** One reservation at `base` of `size`, with mappings [va offset, size] of handles 1, 2, ... */
function description(base: number, size: number, mappings: [number, number][]): RuntimeDescription {
  return {
    pid: 7,
    devices: [device],
    reservations: [
      {
        base,
        size,
        origin: 'vmm',
        mappings: mappings.map(([at, s], i) => ({
          va: base + at,
          size: s,
          offset: 0,
          handle: i + 1,
          access: [Access.ReadWrite],
        })),
      },
    ],
    allocations: mappings.map(([, s], i) => ({
      handle: i + 1,
      size: s,
      location: { type: 'device' as const, id: 0 },
      origin: 'created' as const,
      handleRefs: 0,
      mapRefs: 1,
      exports: 0,
    })),
  };
}

describe('layoutMap', () => {
  const base = 0x7000_0000_0000;

  it('counts as releasable exactly the whole pages no live block touches', () => {
    const d = description(base, 16 * MiB, [
      [0, 4 * MiB],
      [4 * MiB, 4 * MiB],
    ]);
    // A block in page 0, and one across the two mappings (pages 1 and 2): pages 3 is free.
    const blocks = [
      { address: base, size: MiB },
      { address: base + 3 * MiB, size: 2 * MiB },
    ];
    const { summary, svg } = layoutMap(d, { blocks });
    expect(summary.releasableBytes).toBe(2 * MiB);
    expect(summary.blocks).toBe(2);
    expect(summary.blockBytes).toBe(3 * MiB);
    expect(summary.mappedBytes).toBe(8 * MiB);
    expect(svg.match(/<g class="block"/g)?.length).toBe(2);
    expect(svg.match(/class="releasable"/g)?.length).toBe(1);
  });

  it('draws a run of untouched pages as one rectangle, and nothing releasable when every page is used', () => {
    const d = description(base, 8 * MiB, [[0, 8 * MiB]]);
    const none = layoutMap(d, { blocks: [] });
    expect(none.summary.releasableBytes).toBe(8 * MiB);
    expect(none.svg.match(/class="releasable"/g)?.length).toBe(1);
    const full = layoutMap(d, {
      blocks: [0, 2, 4, 6].map((p) => ({ address: base + p * MiB + 512, size: 512 })),
    });
    expect(full.summary.releasableBytes).toBe(0);
  });

  it('shortens a long unmapped run and says its real size', () => {
    const d = description(base, 1024 * MiB, [[0, 2 * MiB]]);
    const { svg, summary } = layoutMap(d);
    expect(summary.reservedAddressBytes).toBe(1024 * MiB);
    expect(svg).toContain('1022.0 MiB reserved, not mapped');
    expect(svg).toContain('(drawn shortened)');
  });

  it('escapes what it prints', () => {
    const { svg } = layoutMap(description(base, 2 * MiB, []), { title: '<script>&' });
    expect(svg).toContain('&#60;script&#62;&#38;');
    expect(svg).not.toContain('<script>');
  });
});
