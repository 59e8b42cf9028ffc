import { expect, it } from 'vitest';
import { hipDemo } from '../../../src/cli/demos/hip.js';
import { formatTrace, Tracer } from '../../../src/core/trace.js';

it('runs seed 1 section 6 on a simulated MI300X, every call hipSuccess, traced through the layers', () => {
  const lines: string[] = [];
  const tracer = new Tracer({ layers: 'generic' });
  hipDemo((line) => lines.push(line), tracer);
  expect(lines.at(-1)).toBe('HIP sequence: every call returned hipSuccess');
  expect(lines.some((l) => /^hipMemMap\(0x[0-9a-f]+, 2097152, 0, 0x1, 0\) -> hipSuccess$/.test(l))).toBe(
    true,
  );
  const tree = formatTrace(tracer.roots);
  expect(tree).toContain('[flavor] hipMemMap');
  expect(tree).toContain('[core] map');
  expect(tree).toContain('[backend] map');
  if (process.env.SHOW_DEMO) console.log(`${lines.join('\n')}\n${tree}`);
});
