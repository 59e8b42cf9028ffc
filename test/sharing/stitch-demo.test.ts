/**
 * The stitch demo (examples/stitch.mjs) on the simulator: two processes, one
 * range holding a local chunk and the other process's chunk, a DtoD copy
 * across the boundary seen by both. (On the GPU: `node examples/stitch.mjs --gpu`,
 * run by conformance/gpu/share.ts's device command.)
 */
import { describe, expect, it } from 'vitest';
import * as vmmkit from '../../src/index.js';

const demoPath = '../../examples/stitch.mjs';

describe('examples/stitch.mjs', () => {
  it("the copy across the boundary lands in the other process's memory", async () => {
    const demo = (await import(demoPath)) as {
      onSimulator(v: typeof vmmkit): { stitcher: Uint8Array; exporter: Uint8Array };
    };
    const seen = demo.onSimulator(vmmkit);
    const text = new TextEncoder().encode('stitched!');
    // What was copied: "stitched!" and then the local chunk's 0x11 fill, starting 4 bytes before the boundary.
    const copied = [...text, ...new Array(12 - text.length).fill(0x11)];
    expect([...seen.stitcher]).toEqual(copied);
    expect([...seen.exporter]).toEqual([...copied.slice(4), 0x11, 0x11, 0x11, 0x11]);
  });
});
