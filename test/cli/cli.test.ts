import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { cudaDemo } from '../../src/cli/demos/cuda.js';
import { formatTrace, Tracer } from '../../src/core/trace.js';
import { capture } from '../support/capture.js';

describe('vmmkit command line', () => {
  it('demo runs the CUDA, HIP and ACL sequences in order, each with its call tree', async () => {
    const { io, out } = capture();
    expect(await runCli(['demo'], io)).toBe(0);
    const text = out.join('\n');
    const order = ['CUDA driver API', 'HIP on a simulated MI300X', 'Ascend ACL'].map((t) => text.indexOf(t));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(text).toContain('CUDA sequence: every call returned CUDA_SUCCESS');
    expect(text).toContain('HIP sequence: every call returned hipSuccess');
    expect(text).toContain('checked 65536 bytes: all match');
    // Each vendor's own layers appear in the trees (seed 1's HIP path among them).
    for (const layer of [
      '[cuda] cuMemMap',
      '[hip] hipMemMap',
      '[rocclr] roc::Device::virtualMap',
      '[rocr] hsa_amd_vmem_map',
      '[thunk] hsaKmtMemoryVaMap',
      '[acl] aclrtMapMem',
    ]) {
      expect(text).toContain(layer);
    }
    expect(text).not.toContain('[core] map');
  });

  it("demo --layers generic shows vmmkit's own layers; a bad --layers is a usage error", async () => {
    const { io, out } = capture();
    expect(await runCli(['demo', '--layers', 'generic'], io)).toBe(0);
    const text = out.join('\n');
    for (const layer of [
      '[flavor] hipMemMap',
      '[core] map',
      '[backend] map',
      '[device] vm.bind',
      '[flavor] aclrtMapMem',
    ])
      expect(text).toContain(layer);
    const bad = capture();
    expect(await runCli(['demo', '--layers', 'kernel'], bad.io)).toBe(2);
  });

  it('demo --flavor picks one flavor; an unknown one is a usage error', async () => {
    const one = capture();
    expect(await runCli(['demo', '--flavor', 'acl'], one.io)).toBe(0);
    expect(one.out.join('\n')).not.toContain('CUDA driver API');
    const bad = capture();
    expect(await runCli(['demo', '--flavor', 'opencl'], bad.io)).toBe(2);
    expect(bad.err.join('\n')).toContain("unknown flavor 'opencl'");
  });

  it('demo --json prints one JSON document: each demo with its call tree and nested layers', async () => {
    const { io, out } = capture();
    expect(await runCli(['demo', '--flavor', 'cuda', '--layers', 'generic', '--json'], io)).toBe(0);
    const doc = JSON.parse(out.join('\n')) as {
      demos: { flavor: string; lines: string[]; trace: unknown }[];
    };
    expect(doc.demos.map((d) => d.flavor)).toEqual(['cuda']);
    expect(doc.demos[0].lines.length).toBeGreaterThan(0);
    const tree = doc.demos[0].trace as { name: string; layer: string; children: { layer: string }[] }[];
    const map = tree.find((s) => s.name === 'cuMemMap')!;
    expect(map.layer).toBe('flavor');
    expect(map.children[0].layer).toBe('core');
  });

  it("trace runs a user's script with tracing on and prints its tree", async () => {
    const { io, out } = capture();
    expect(await runCli(['trace', '--layers', 'generic', 'examples/grow.mjs'], io)).toBe(0);
    const text = out.join('\n');
    expect(text).toContain('[flavor] cuMemsetD8');
    expect(text).toContain('[device] copyEngine.fill');
    expect(text).toMatch(/\[flavor\] cuMemUnmap\(0x7[0-9a-f]+, 0x400000\) -> 0/);
  });

  it('every subcommand answers --help and --version with its usage on stdout, exit 0', async () => {
    for (const command of ['demo', 'trace', 'inspect', 'replay', 'advise', 'report', 'map']) {
      for (const ask of ['--help', '-h']) {
        const { io, out, err } = capture();
        expect(await runCli([command, ask], io), `${command} ${ask}`).toBe(0);
        expect(out.join('\n')).toMatch(new RegExp(`^usage: vmmkit ${command} `));
        expect(err).toEqual([]);
      }
      const { io, out } = capture();
      expect(await runCli([command, '--version'], io)).toBe(0);
      expect(out.join('\n')).toMatch(/^vmmkit \d+\.\d+\.\d+/);
    }
    const top = capture();
    expect(await runCli(['--help'], top.io)).toBe(0);
    expect(top.out.join('\n')).toContain('usage: vmmkit demo');
  });

  it('an unknown command prints usage and fails', async () => {
    const { io, err } = capture();
    expect(await runCli(['frobnicate'], io)).toBe(2);
    expect(err.join('\n')).toContain('usage: vmmkit demo');
  });
});

it('the CUDA demo succeeds and its trace crosses every layer', () => {
  const lines: string[] = [];
  const tracer = new Tracer({ layers: 'generic' });
  expect(cudaDemo((l) => lines.push(l), tracer)).toBe(true);
  expect(lines.filter((l) => l.includes('check:')).every((l) => l.endsWith('yes'))).toBe(true);
  const tree = formatTrace(tracer.roots);
  expect(tree).toMatch(
    /\[flavor\] cuMemSetAccess[^\n]*\n\s+\[core\] setAccess[^\n]*\n\s+\[backend\] setAccess[^\n]*\n\s+\[device\] pte\.set/,
  );
});
