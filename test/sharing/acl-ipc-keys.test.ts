/**
 * ACL's IPC by key between processes in the simulator's model of one H200:
 * the scenario conformance/gpu/share.ts also runs across real OS processes
 * on the GPU (aclIpcKeyScenario, conformance/sharing/scenarios.ts).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { aclIpcKeyScenario, type ScenarioResult } from '../../conformance/sharing/scenarios.js';
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

describe('the simulator against the H200 (conformance/results/h200-sharing.json)', () => {
  it('the ipc-key scenario passed every check across real processes there, and observed what the simulator does', async () => {
    const recorded = JSON.parse(
      readFileSync(new URL('../../conformance/results/h200-sharing.json', import.meta.url), 'utf8'),
    ) as { scenarios: ScenarioResult[] };
    const onGpu = recorded.scenarios.find((s) => s.flavour === 'acl' && s.scenario === 'ipc-key');
    expect(onGpu?.checks.length).toBeGreaterThanOrEqual(8);
    expect(onGpu?.checks.every((c) => c.pass)).toBe(true);
    const sim = await aclIpcKeyScenario(simHarness());
    expect(sim.observed).toEqual(onGpu?.observed);
  });
});
