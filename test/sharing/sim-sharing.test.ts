/**
 * Sharing between processes in the simulator's model of one H200: the
 * scenarios conformance/gpu/share.ts runs across real OS processes on the
 * GPU (conformance/sharing/scenarios.ts), here with simulated processes of
 * one machine.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { FlavourName } from '../../conformance/sharing/peer.js';
import {
  exporterEndsScenario,
  NEVER_PASSED_CODE,
  type ScenarioResult,
  sharedScenario,
} from '../../conformance/sharing/scenarios.js';
import { simHarness } from '../../conformance/sharing/sim-harness.js';

const failed = (r: { checks: { pass: boolean }[]; error?: string }) => ({
  error: r.error,
  failed: r.checks.filter((c) => !c.pass),
});

describe.each(['cuda', 'hip', 'acl'] as FlavourName[])(
  '%s processes sharing memory on a simulated H200',
  (flavour) => {
    it('bytes both ways, memory freed when the last process lets go, never-passed fds refused, the stitch', async () => {
      const r = await sharedScenario(simHarness(), flavour);
      expect(failed(r)).toEqual({ error: undefined, failed: [] });
      expect(r.checks.length).toBeGreaterThan(10);
    });

    it.each(['exit', 'kill'] as const)(
      'the exporter ends (%s) while the importer maps the memory',
      async (how) => {
        const r = await exporterEndsScenario(simHarness(), flavour, how);
        expect(failed(r)).toEqual({ error: undefined, failed: [] });
      },
    );
  },
);

describe('the simulator against the H200 (conformance/results/h200-sharing.json)', () => {
  const recorded = JSON.parse(
    readFileSync(new URL('../../conformance/results/h200-sharing.json', import.meta.url), 'utf8'),
  ) as { driverFacts: Record<string, unknown>; scenarios: ScenarioResult[] };

  it('the driver refused every descriptor never passed with CUDA_ERROR_UNKNOWN (999), as the error tables say', () => {
    const f = recorded.driverFacts;
    expect([f.importNeverOpened, f.importDevNull, f.importExporterNumberUnpassed]).toEqual([999, 999, 999]);
    expect(NEVER_PASSED_CODE.cuda).toBe(999);
  });

  it.each(['cuda', 'hip', 'acl'] as FlavourName[])(
    '%s: what the importer observes (properties, codes) is what it observed on the H200',
    async (flavour) => {
      const onGpu = recorded.scenarios.find((s) => s.flavour === flavour && s.scenario === 'shared')!;
      expect(onGpu.checks.every((c) => c.pass)).toBe(true);
      const sim = await sharedScenario(simHarness(), flavour);
      expect(sim.observed).toEqual(onGpu.observed);
    },
  );

  it("CUDA: an imported handle's properties are the driver's own answer", async () => {
    const sim = await sharedScenario(simHarness(), 'cuda');
    expect(sim.observed.importerProps).toEqual(recorded.driverFacts.props);
  });
});
