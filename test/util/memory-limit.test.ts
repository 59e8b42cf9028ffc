/** Memory limits as people give them (src/util/memory-limit.ts, Note [Memory limits]). */
import { describe, expect, it } from 'vitest';
import { DEVICE_SPECS } from '../../src/util/device-specs.js';
import { MemoryLimitError, UnknownDeviceError } from '../../src/util/errors.js';
import { deviceTotalMemory, parseMemoryLimit } from '../../src/util/memory-limit.js';

const MiB = 2 ** 20;
const GiB = 2 ** 30;

function kind(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (e instanceof MemoryLimitError) return e.kind;
    throw e;
  }
  return 'accepted';
}

describe('parseMemoryLimit', () => {
  it('reads sizes with units, and plain bytes of at least 1 MiB, as before', () => {
    expect(parseMemoryLimit('14000MiB')).toBe(14000 * MiB);
    expect(parseMemoryLimit('13.7GiB')).toBe(Math.floor((137 * GiB) / 10));
    expect(parseMemoryLimit('14.7GB')).toBe(14_700_000_000);
    expect(parseMemoryLimit('512KiB')).toBe(512 * 1024);
    expect(parseMemoryLimit(String(MiB))).toBe(MiB);
    expect(parseMemoryLimit('150109880320')).toBe(150_109_880_320);
    expect(parseMemoryLimit(3 * GiB)).toBe(3 * GiB);
  });

  it('refuses a unitless number that cannot be meant as bytes, with the forms that work', () => {
    expect(() => parseMemoryLimit('14000')).toThrow(
      '14000 has no unit and is below 1 MiB, so it cannot be meant as bytes; write bytes with a unit (14000MiB, 13.7GiB, 14.7GB), whole bytes of at least 1 MiB, or a fraction of the device (0.9 or 90%)',
    );
    expect(kind(() => parseMemoryLimit(String(MiB - 1)))).toBe('ambiguous-number');
    expect(kind(() => parseMemoryLimit('1.5'))).toBe('ambiguous-number');
    expect(kind(() => parseMemoryLimit(14000))).toBe('ambiguous-number');
    expect(kind(() => parseMemoryLimit('0'))).toBe('no-memory');
    expect(() => parseMemoryLimit('0')).toThrow('0 is no memory at all');
    expect(kind(() => parseMemoryLimit('-3GiB'))).toBe('not-a-size');
    expect(kind(() => parseMemoryLimit('12 parsecs'))).toBe('not-a-size');
    expect(kind(() => parseMemoryLimit('150%', 'H100'))).toBe('over-device');
    expect(kind(() => parseMemoryLimit(Number.NaN))).toBe('no-memory');
    expect(kind(() => parseMemoryLimit({} as unknown as string))).toBe('not-a-size');
  });

  it('a fraction is what set_per_process_memory_fraction allows: static_cast<size_t>(f * totalGlobalMem)', () => {
    // 0.9 * 150,109,880,320 in doubles is 135,098,892,288.00002; the cast truncates.
    expect(parseMemoryLimit('0.9', 'H200')).toBe(135_098_892_288);
    expect(parseMemoryLimit(0.9, DEVICE_SPECS.H200)).toBe(135_098_892_288);
    expect(parseMemoryLimit('90%', 'h200')).toBe(135_098_892_288);
    expect(parseMemoryLimit('0.5', 'H100')).toBe(42_508_746_752);
    expect(parseMemoryLimit('1', 'A100-80GB')).toBe(DEVICE_SPECS['A100-80GB'].totalMemory);
    expect(parseMemoryLimit('.25', 80 * GiB)).toBe(20 * GiB);
    expect(parseMemoryLimit('0.3', 'Ascend-910B')).toBe(Math.floor(0.3 * 62_423 * MiB));
  });

  it('a fraction without a device is refused; an unknown device is named', () => {
    expect(() => parseMemoryLimit('0.9')).toThrow(
      "0.9 is a fraction of the device's memory, and no device is given",
    );
    expect(kind(() => parseMemoryLimit(0.9))).toBe('fraction-needs-device');
    expect(() => parseMemoryLimit('0.9', 'B200')).toThrow(UnknownDeviceError);
    expect(kind(() => parseMemoryLimit('0.9', -5))).toBe('no-memory');
    expect(kind(() => parseMemoryLimit('1e-12', 'H100'))).toBe('not-a-size');
  });

  it('deviceTotalMemory takes a spec, a name or bytes', () => {
    expect(deviceTotalMemory('mi300x')).toBe(192 * GiB);
    expect(deviceTotalMemory(DEVICE_SPECS.L40S)).toBe(DEVICE_SPECS.L40S.totalMemory);
    expect(deviceTotalMemory(80 * GiB)).toBe(80 * GiB);
  });
});
