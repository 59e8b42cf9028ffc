/**
 * cycle-footprint's per-function table (bench/callgrind-functions.ts): self
 * costs from a callgrind file, JIT addresses named through a perf map.
 */
import { describe, expect, it } from 'vitest';
import { functionCosts, perfMapNames } from '../../bench/callgrind-functions.js';

// Two cycles' worth, in callgrind's compressed form: names given once, positions relative after the
// first, and a call whose inclusive cost (the line after calls=) belongs to the callee, not the caller.
const CALLGRIND = `version: 1
positions: line
events: Ir Dr ILmr DLmr

ob=(1) ???
fl=(1) ???
fn=(1) 0x0000000000001010
0 100 10 4 2
+2 20 0 2 0
cfn=(2) Builtins_RecordWriteSaveFP
calls=2 0
0 60 6 1 1
fn=(2)
0 60 6 1 1
fn=(3) 0x0000000000002000
* 40 4 0 2
fn=(1)
0 80 8 2 2

totals: 300 28 10 7
`;

const PERF_MAP = `1000 200 JS:*set file:///home/x/vmmkit/dist/src/util/ordered-map.js:69:8
3000 10 JS:~other file:///home/x/vmmkit/dist/src/core/runtime.js:5:1
`;

describe('callgrind functions', () => {
  it('names an address by the perf map range holding it, and nothing outside every range', () => {
    const nameOf = perfMapNames(PERF_MAP);
    expect(nameOf(0x1000)).toMatch(/ordered-map/);
    expect(nameOf(0x11ff)).toMatch(/ordered-map/);
    expect(nameOf(0x1200)).toBeUndefined();
    expect(nameOf(0xfff)).toBeUndefined();
    expect(nameOf(0x3005)).toMatch(/runtime/);
  });

  it('sums self costs per function and cycle, leaving a call line to its callee', () => {
    const costs = functionCosts(CALLGRIND, perfMapNames(PERF_MAP), 2, 10);
    expect(costs).toEqual([
      // 100 + 20 + 80 instructions over two cycles; the 60 after calls= is RecordWrite's, not set's.
      { name: 'set src/util/ordered-map.js:69', ir: 100, code_lines: 4, data_lines: 2 },
      { name: 'Builtins_RecordWriteSaveFP', ir: 30, code_lines: 1, data_lines: 1 },
      // An address no range holds keeps callgrind's name.
      { name: '0x0000000000002000', ir: 20, code_lines: 0, data_lines: 1 },
    ]);
    expect(functionCosts(CALLGRIND, perfMapNames(PERF_MAP), 2, 1)).toHaveLength(1);
  });
});
