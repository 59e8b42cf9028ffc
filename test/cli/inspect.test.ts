import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { capture } from '../support/capture.js';

const dir = mkdtempSync(join(tmpdir(), 'vmmkit-inspect-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Seed 1, section 6, grown in place: two handles mapped side by side, then undone. */
const HIP_SCRIPT = join(dir, 'hip.mjs');
writeFileSync(
  HIP_SCRIPT,
  `export default ({ createHip }) => {
  const hip = createHip();
  const MiB2 = 2 * 1024 * 1024;
  const prop = { type: 1, requestedHandleTypes: 0, location: { type: 1, id: 0 } };
  const rw = [{ location: { type: 1, id: 0 }, flags: 3 }];
  const ptr = { value: 0n };
  hip.hipMemAddressReserve(ptr, 2 * MiB2, 0, null, 0);
  const handles = [];
  for (let i = 0; i < 2; i++) {
    const h = { value: 0n };
    hip.hipMemCreate(h, MiB2, prop, 0);
    hip.hipMemMap(ptr.value + BigInt(i * MiB2), MiB2, 0, h.value, 0);
    handles.push(h.value);
  }
  hip.hipMemSetAccess(ptr.value, 2 * MiB2, rw, 1);
  hip.hipMemUnmap(ptr.value, 2 * MiB2);
  for (const h of handles) hip.hipMemRelease(h);
  hip.hipMemAddressFree(ptr.value, 2 * MiB2);
  const kept = { value: 0n };
  const h = { value: 0n };
  hip.hipMemAddressReserve(kept, MiB2, 0, null, 0);
  hip.hipMemCreate(h, MiB2, prop, 0);
  hip.hipMemMap(kept.value, MiB2, 0, h.value, 0);
};
`,
);

describe('vmmkit trace --layers and --break', () => {
  it('--layers vendor prints ROCm’s path; --break prints the state at each stop, before the call', async () => {
    const { io, out, err } = capture();
    expect(await runCli(['trace', '--layers', 'vendor', '--break', 'hsa_amd_vmem_map', HIP_SCRIPT], io)).toBe(
      0,
    );
    expect(err).toEqual([]);
    const breaks = out.filter((l) => l.startsWith('--- break at hsa_amd_vmem_map'));
    expect(breaks).toHaveLength(3);
    expect(breaks[0].split('\n')[0]).toBe(
      '--- break at hsa_amd_vmem_map: [hip] hipMemMap > [rocclr] roc::Device::virtualMap > [rocr] hsa_amd_vmem_map',
    );
    // Before the first map: the parent buffer holds no sub-buffer; before the second, one.
    expect(breaks[0]).toContain('parent virtual amd::Memory 0x700000000000 +0x400000 (kParent, VA only)');
    expect(breaks[0]).not.toContain('sub-buffer 0x');
    expect(breaks[1]).toContain(
      'sub-buffer 0x700000000000 +0x200000 <-> phys_mem_obj of hip::GenericAllocation 0x1',
    );
    expect(breaks[1]).toContain('refcount 2 (1 handle, 1 sub-buffer)');
    expect(breaks[1]).not.toContain('sub-buffer 0x700000200000');
    const tree = out.at(-1)!;
    expect(tree).toMatch(/^\[hip\] hipMemAddressReserve\(/);
    expect(tree).toContain('    [rocr] hsa_amd_vmem_map(0x700000000000, 0x200000, 1, 0)');
    expect(tree).toContain('[thunk] hsaKmtMemoryVaMap(0, 0x700000000000, 0x200000, 3)');
    expect(tree).not.toContain('[core]');
  });

  it('--layers generic gives the generic tree (vendor layers are the default), breaking on generic names', async () => {
    const vendor = capture();
    expect(await runCli(['trace', HIP_SCRIPT], vendor.io)).toBe(0);
    expect(vendor.out.at(-1)).toContain('[rocclr] roc::Device::virtualMap');
    const plain = capture();
    expect(await runCli(['trace', '--layers', 'generic', HIP_SCRIPT], plain.io)).toBe(0);
    const generic = capture();
    expect(await runCli(['trace', '--layers', 'generic', '--break', 'map', HIP_SCRIPT], generic.io)).toBe(0);
    const strip = (t: string) => t.replace(/ {2}\([\d.]+ us\)/g, '');
    expect(strip(generic.out.at(-1)!)).toBe(strip(plain.out.at(-1)!));
    expect(plain.out.at(-1)).toContain('[flavor] hipMemMap');
    expect(plain.out.at(-1)).not.toContain('[rocclr]');
    // 'map' is core's and the backend's: two stops per hipMemMap, the state still in HIP's objects.
    const breaks = generic.out.filter((l) => l.startsWith('--- break at map'));
    expect(breaks).toHaveLength(6);
    expect(breaks[0].split('\n')[0]).toBe('--- break at map: [flavor] hipMemMap > [core] map');
    expect(breaks[0]).toContain('parent virtual amd::Memory 0x700000000000 +0x400000 (kParent, VA only)');
  });

  it('--break alone traces in vendor layers (the names are the vendors’)', async () => {
    const { io, out } = capture();
    expect(await runCli(['trace', '--break', 'roc::Device::virtualMap', HIP_SCRIPT], io)).toBe(0);
    expect(out.filter((l) => l.startsWith('--- break at roc::Device::virtualMap'))).toHaveLength(3);
    expect(out.at(-1)).toContain('[hip] hipMemMap');
  });

  it('bad --layers is a usage error; a breakpoint never reached is said', async () => {
    const bad = capture();
    expect(await runCli(['trace', '--layers', 'rocm', HIP_SCRIPT], bad.io)).toBe(2);
    expect(bad.err.join('\n')).toContain("--layers is generic or vendor, not 'rocm'");
    const never = capture();
    expect(
      await runCli(['trace', '--layers', 'vendor', '--break', 'hsaKmtNothing', HIP_SCRIPT], never.io),
    ).toBe(0);
    expect(never.err).toEqual(['breakpoint hsaKmtNothing was never reached']);
  });
});

describe('vmmkit inspect', () => {
  it("prints each process at its end in its vendor's object model", async () => {
    const { io, out, err } = capture();
    expect(await runCli(['inspect', HIP_SCRIPT], io)).toBe(0);
    expect(err).toEqual([]);
    const text = out.join('\n').split('\n');
    expect(text[0]).toMatch(/^=== HIP process \d+ when the script returned$/);
    expect(text.slice(2)).toEqual([
      '  parent virtual amd::Memory 0x6ffffb600000 +0x200000 (kParent, VA only)',
      '    sub-buffer 0x6ffffb600000 +0x200000 <-> phys_mem_obj of hip::GenericAllocation 0x1000002 (offset 0x0); no device has access',
      '  hip::GenericAllocation 0x1000002: phys amd::Memory (ROCCLR_MEM_PHYMEM) 0x200000 on device 0; refcount 2 (1 handle, 1 sub-buffer); sub-buffers at 0x6ffffb600000',
    ]);
  });

  it('--json gives describe() as JSON; a missing script is one line and exit 1', async () => {
    const { io, out } = capture();
    expect(await runCli(['inspect', '--json', HIP_SCRIPT], io)).toBe(0);
    const [p] = JSON.parse(out.join('\n')) as { vendor: string; description: { allocations: unknown[] } }[];
    expect(p.vendor).toBe('HIP');
    expect(p.description.allocations).toHaveLength(1);
    const missing = capture();
    expect(await runCli(['inspect', join(dir, 'absent.mjs')], missing.io)).toBe(1);
    expect(missing.err).toHaveLength(1);
    expect(missing.err[0]).toMatch(/^vmmkit inspect: cannot load /);
    const none = capture();
    expect(await runCli(['inspect'], none.io)).toBe(2);
  });
});
