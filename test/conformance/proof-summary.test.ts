/**
 * A GPU benchmark's result file carries the proof's summary (conformance
 * counts, the backend contract, the HIP/ACL sequences and tables): it must be
 * the latest run's, as conformance/gpu/proof-summary.ts writes it, not the run
 * that was latest when the benchmark ran.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  LATEST_FLAVOUR_TABLES,
  LATEST_PROOF,
  proofFields,
  readFlavourTables,
} from '../../conformance/gpu/proof-summary.js';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('bench/results/h200-cuda.json', () => {
  const file = JSON.parse(read('bench/results/h200-cuda.json')) as Record<string, unknown>;
  const latest = proofFields(LATEST_PROOF, LATEST_FLAVOUR_TABLES);

  it("carries the latest run's proof (node dist/conformance/gpu/proof-summary.js bench/results/h200-cuda.json)", () => {
    for (const key of ['conformance', 'contract', 'flavours_over_cuda', 'flavour_tables'] as const)
      expect(file[key], key).toEqual(latest[key]);
  });

  it("dates its conformance figures by the run's own date", () => {
    const prove = JSON.parse(read(LATEST_PROOF)) as { date: string; conformance: { agree: number } };
    expect(latest.conformance?.from.date).toBe(prove.date);
    expect(latest.conformance?.agree).toBe(prove.conformance.agree);
  });
});

describe('readFlavourTables', () => {
  it("reads vitest's summary line and the failing rows", () => {
    const tables = readFlavourTables(LATEST_FLAVOUR_TABLES);
    expect(tables.passed).toBeGreaterThan(300);
    expect([tables.failed, tables.failures]).toEqual([0, []]);
    const plain = read(LATEST_FLAVOUR_TABLES).replace(
      new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'),
      '',
    );
    const summary = plain.split('\n').find((l) => /^\s*Tests\s/.test(l))!;
    expect(summary).toContain(`${tables.passed} passed`);
    expect(summary).toContain(`${tables.skipped} skipped`);
  });
});
