/** The device table (src/util/device-specs.ts): names as people write them, one source for every figure. */
import { describe, expect, it } from 'vitest';
import { DEVICE_PRESETS } from '../../src/backends/sim/presets.js';
import { DEVICE_NAMES, DEVICE_SPECS, findDevice } from '../../src/util/device-specs.js';
import { UnknownDeviceError } from '../../src/util/errors.js';

const MiB = 2 ** 20;
const GiB = 2 ** 30;

describe('findDevice', () => {
  it('takes the names people write, in any case, with spaces, hyphens or underscores', () => {
    const cases: [string, string][] = [
      ['H100', 'H100'],
      ['h100', 'H100'],
      ['NVIDIA H100 80GB HBM3', 'H100'],
      ['H200', 'H200'],
      ['nvidia h200', 'H200'],
      ['A100-80GB', 'A100-80GB'],
      ['a100_80gb', 'A100-80GB'],
      ['A100 80GB', 'A100-80GB'],
      ['NVIDIA A100-SXM4-40GB', 'A100-40GB'],
      ['a100-40gb', 'A100-40GB'],
      ['l40s', 'L40S'],
      ['MI300X', 'MI300X'],
      ['AMD Instinct MI300X', 'MI300X'],
      ['mi250x', 'MI250X'],
      ['Ascend-910B', 'Ascend910B'],
      ['Ascend910B', 'Ascend910B'],
      ['ascend_910b', 'Ascend910B'],
      ['Ascend 910B', 'Ascend910B'],
    ];
    for (const [name, key] of cases) expect(findDevice(name).key, name).toBe(key);
  });

  it('an unknown name is a typed error naming the known ones; a bare A100 asks which', () => {
    expect(() => findDevice('TPUv5')).toThrow(UnknownDeviceError);
    expect(() => findDevice('TPUv5')).toThrow(
      'unknown device "TPUv5" (known: H100, H200, A100-80GB, A100-40GB, L40S, MI300X, MI250X, Ascend-910B)',
    );
    expect(() => findDevice('A100')).toThrow('unknown device "A100": which one, A100-80GB or A100-40GB?');
    expect(() => findDevice('')).toThrow(/known: H100/);
    expect(() => findDevice(42 as unknown as string)).toThrow(UnknownDeviceError);
  });

  it('lists every device once in DEVICE_NAMES', () => {
    expect(DEVICE_NAMES).toEqual([
      'H100',
      'H200',
      'A100-80GB',
      'A100-40GB',
      'L40S',
      'MI300X',
      'MI250X',
      'Ascend-910B',
    ]);
  });
});

describe('the figures', () => {
  it("are the drivers' totals where measured, and the presets the simulator always had", () => {
    expect(DEVICE_SPECS.H200.totalMemory).toBe(150_109_880_320);
    expect(DEVICE_SPECS.H100.totalMemory).toBe(85_017_493_504);
    expect(DEVICE_SPECS.MI300X.totalMemory).toBe(192 * GiB);
    // The driver's total as torch_npu's OOM messages give it (60.96 GiB), not the 64 GB of HBM sold.
    expect(DEVICE_SPECS.Ascend910B.totalMemory).toBe(62_423 * MiB);
    expect(DEVICE_SPECS.MI300X.minimumGranularity).toBe(4096);
    expect(DEVICE_SPECS.MI250X.minimumGranularity).toBe(4096);
    expect(DEVICE_SPECS.MI250X.recommendedGranularity).toBe(2 * MiB);
  });

  it('each says where it comes from, and is a whole number of bytes of granularity-aligned sense', () => {
    for (const s of Object.values(DEVICE_SPECS)) {
      expect(s.memorySource.length, s.key).toBeGreaterThan(20);
      expect(s.memorySource, s.key).toMatch(/^(measured|not measured|not documented)/);
      expect(Number.isSafeInteger(s.totalMemory), s.key).toBe(true);
      expect(s.recommendedGranularity % s.minimumGranularity, s.key).toBe(0);
      expect(findDevice(s.key)).toBe(s);
      expect(findDevice(s.name)).toBe(s);
    }
  });

  it("the simulator's presets read the table: every device, the same sizes, the old names kept", () => {
    for (const [key, s] of Object.entries(DEVICE_SPECS)) {
      const p = DEVICE_PRESETS[key as keyof typeof DEVICE_PRESETS];
      expect(p, key).toBeDefined();
      expect([p.name, p.totalMemory, p.minimumGranularity, p.recommendedGranularity], key).toEqual([
        s.name,
        s.totalMemory,
        s.minimumGranularity,
        s.recommendedGranularity,
      ]);
    }
    expect(DEVICE_PRESETS.H200.name).toBe('NVIDIA H200');
    expect(DEVICE_PRESETS.MI300X.name).toBe('AMD Instinct MI300X');
    expect(DEVICE_PRESETS.Ascend910B.name).toBe('Ascend910B');
    expect(DEVICE_PRESETS.H200.driverAttributes?.size).toBeGreaterThan(0);
  });
});
