/**
 * The devices people have (issue 31, section 4): every device the simulator
 * models is known by name and by memory, and a replay on it runs with its
 * own size and VMM granularity from the one device table, not the H200's.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { DEVICE_PRESETS } from '../../src/compose/create-runtime.js';

import { replayOptions } from '../../src/entry/replay-options.js';
import { readSnapshotFile } from '../../src/replay/read/load.js';
import { DEVICE_SPECS, type DeviceKey, deviceOfMemory, findDevice } from '../../src/util/device-specs.js';
import { capture } from '../support/capture.js';
import { replay } from '../support/replay.js';

const KEYS = Object.keys(DEVICE_SPECS) as DeviceKey[];
const GiB = 2 ** 30;

describe('the device table', () => {
  it('names the devices the issue asks for, each with its figures written once', () => {
    expect(KEYS).toEqual([
      'H100',
      'H200',
      'A100-80GB',
      'A100-40GB',
      'L40S',
      'MI300X',
      'MI250X',
      'Ascend910B',
    ]);
    // The simulator's presets are the table's figures, not copies of their own.
    for (const k of KEYS) {
      const p = DEVICE_PRESETS[k];
      expect([p.totalMemory, p.minimumGranularity, p.recommendedGranularity], k).toEqual([
        DEVICE_SPECS[k].totalMemory,
        DEVICE_SPECS[k].minimumGranularity,
        DEVICE_SPECS[k].recommendedGranularity,
      ]);
    }
  });

  it('says where a figure is not documented, and whose sources it is chosen from', () => {
    for (const k of KEYS) {
      const source = DEVICE_SPECS[k].memorySource;
      if (source.startsWith('measured')) continue;
      // An undocumented or unmeasured figure names the public record it comes from.
      expect(source, k).toMatch(/^not (measured|documented)/);
      expect(source, k).toMatch(/github\.com|data sheet|product pages|Huawei|AMD|NVIDIA/);
    }
  });

  it('knows each device by its memory where no other device has the same', () => {
    for (const k of KEYS) {
      const spec = DEVICE_SPECS[k];
      const twins = KEYS.filter((o) => DEVICE_SPECS[o].totalMemory === spec.totalMemory);
      if (twins.length === 1) expect(deviceOfMemory(spec.totalMemory), k).toBe(spec);
    }
    expect(deviceOfMemory(192 * GiB).key).toBe('MI300X');
    expect(deviceOfMemory(192 * GiB).minimumGranularity).toBe(4096);
    expect(deviceOfMemory(62_423 * 2 ** 20).key).toBe('Ascend910B');
    // A memory no device has is a device of its own, with the NVIDIA parts' 2 MiB.
    const other = deviceOfMemory(80 * GiB);
    expect([other.key, other.totalMemory, other.minimumGranularity]).toEqual(['custom', 80 * GiB, 2 ** 21]);
  });

  it('replay() takes a device by name or by memory, as --device does', () => {
    const snapshot = readSnapshotFile('test/replay/fixtures/hand.pickle');
    expect(replayOptions(snapshot, { device: 'mi300x' }).device).toBe('MI300X');
    expect(replayOptions(snapshot, { device: 'Ascend 910B' }).device).toBe('Ascend910B');
    expect(replayOptions(snapshot, { device: '192GiB' }).device).toBe(DEVICE_SPECS.MI300X);
    for (const k of KEYS) expect(findDevice(k).key).toBe(k);
  });

  it('a replay runs on each device with its own memory and granularity', () => {
    const snapshot = readSnapshotFile('test/replay/fixtures/hand.pickle');
    for (const k of KEYS) {
      const seen: { total: number; minimum: number; recommended: number }[] = [];
      replay(snapshot, {
        device: k,
        onStep: (step) => {
          if (seen.length > 0) return;
          const d = step.runtime.device(step.device);
          seen.push({
            total: d.totalMemory,
            minimum: d.minimumGranularity,
            recommended: d.recommendedGranularity,
          });
        },
      });
      expect(seen, k).toEqual([
        {
          total: DEVICE_SPECS[k].totalMemory,
          minimum: DEVICE_SPECS[k].minimumGranularity,
          recommended: DEVICE_SPECS[k].recommendedGranularity,
        },
      ]);
    }
  });

  it('vmmkit replay --device takes a device by its memory: a fraction of 192GiB is of the MI300X', async () => {
    const c = capture();
    const argv = ['replay', 'test/replay/fixtures/hand.pickle', '--allocator', 'pytorch', '--json'];
    expect(await runCli([...argv, '--device', '192GiB', '--memory-limit', '0.5'], c.io)).toBe(0);
    expect(JSON.parse(c.out.join('\n')).memoryLimit).toBe(96 * GiB);
    const named = capture();
    expect(await runCli([...argv, '--device', 'MI300X', '--memory-limit', '0.5'], named.io)).toBe(0);
    expect(JSON.parse(named.out.join('\n')).memoryLimit).toBe(96 * GiB);
  });
});
