/**
 * ACL's IPC by key between processes in the simulator's model of one H200:
 * the scenario conformance/gpu/share.ts also runs across real OS processes
 * on the GPU (aclIpcKeyScenario, conformance/sharing/scenarios.ts).
 */
import { describe, expect, it } from 'vitest';
import { aclIpcKeyScenario } from '../../conformance/sharing/scenarios.js';
import { simHarness } from '../../conformance/sharing/sim-harness.js';

describe('ACL processes sharing aclrtMalloc memory by key on a simulated H200', () => {
  it('whitelist, bytes both ways, aclrtFree withdraws the key, the memory goes at the last close', async () => {
    const r = await aclIpcKeyScenario(simHarness());
    expect({ error: r.error, failed: r.checks.filter((c) => !c.pass) }).toEqual({
      error: undefined,
      failed: [],
    });
    expect(r.checks.length).toBeGreaterThanOrEqual(8);
    expect(r.observed).toMatchObject({ outsiderImport: 207006, importAfterFree: 107000 });
  });
});
