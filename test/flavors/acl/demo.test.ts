import { expect, it } from 'vitest';
import { aclDemo } from '../../../src/cli/demos/acl.js';
import { formatTrace, Tracer } from '../../../src/core/trace.js';

it('the ACL demo runs the seven steps, each answering ACL_SUCCESS', () => {
  const lines: string[] = [];
  const tracer = new Tracer({ layers: 'generic' });
  aclDemo((l) => lines.push(l), tracer);
  const calls = lines.filter((l) => l.includes(' -> '));
  expect(calls.length).toBe(13);
  // Seed 2's flow has no access step, and neither has the demo.
  expect(lines.some((l) => l.includes('aclrtMemSetAccess'))).toBe(false);
  for (const l of calls) expect(l).toMatch(/ACL_SUCCESS \(0\)$/);
  expect(lines).toContain('   checked 65536 bytes: all match');
  const tree = formatTrace(tracer.roots);
  expect(tree).toMatch(/\[flavor\] aclrtMapMem/);
  expect(tree).toMatch(/\[core\] map/);
  expect(tree).toMatch(/\[backend\] map/);
  if (process.env.SHOW_DEMO) console.log(`${lines.join('\n')}\n${tree}`);
});
