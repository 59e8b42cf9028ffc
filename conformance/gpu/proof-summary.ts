/**
 * The proof's summary as a GPU benchmark's result file carries it: the
 * conformance counts, the backend contract and the HIP/ACL sequences from a
 * prove.json, and the HIP/ACL tables' counts from their vitest transcript,
 * each with the file and date it was read from.
 *
 *   node dist/conformance/gpu/proof-summary.js bench/results/h200-cuda.json
 *
 * rewrites those fields of the result file from the latest run's files
 * (conformance/results/h200-vmmkit-prove.json, h200-flavors.txt) and leaves
 * the rest as its benchmark wrote it. bench/gpu.ts writes the same fields
 * through proofFields when it is given --prove and --flavours;
 * test/conformance/proof-summary.test.ts holds the committed file to the
 * latest run.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface Proof {
  date?: string;
  commit?: string | null;
  contract: { passed: number; total: number; ms?: number; checks?: unknown[] };
  conformance: { cases: number; agree: number; agreeWithSimulator: number; agreeOrKnownDivergence: number };
  sequences: Record<string, { cuda: { pass: boolean }; sim: { pass: boolean }; sameCodes: boolean }>;
}

export const LATEST_PROOF = 'conformance/results/h200-vmmkit-prove.json';
export const LATEST_FLAVOUR_TABLES = 'conformance/results/h200-flavors.txt';

const root = new URL('../../../', import.meta.url);
const readText = (path: string): string => {
  const at = existsSync(path) ? path : fileURLToPath(new URL(path, root));
  if (!existsSync(at)) throw new Error(`${path}: no such file`);
  return readFileSync(at, 'utf8');
};

/** The counts and failing rows of a vitest --reporter=verbose transcript of the HIP/ACL tables. */
export function readFlavourTables(path: string) {
  const text = readText(path).replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '');
  const summary = text.split('\n').find((l) => /^\s*Tests\s/.test(l)) ?? '';
  const count = (word: string) => Number(new RegExp(`(\\d+) ${word}`).exec(summary)?.[1] ?? 0);
  const failures = [...text.matchAll(/^\s*FAIL\s+(.+)$/gm)].map((m) => m[1]!.trim());
  return {
    transcript: path,
    passed: count('passed'),
    skipped: count('skipped'),
    failed: count('failed'),
    failures: [...new Set(failures)],
  };
}

/**
 * A result file's proof fields from a prove.json (and the flavour tables'
 * transcript, where given): conformance (with the file and the run's date and
 * commit), contract, flavours_over_cuda and flavour_tables.
 */
export function proofFields(provePath: string | undefined, flavoursPath: string | undefined) {
  const prove = provePath ? (JSON.parse(readText(provePath)) as Proof) : undefined;
  return {
    conformance: prove
      ? {
          cases: prove.conformance.cases,
          agree: prove.conformance.agree,
          agreeWithSimulator: prove.conformance.agreeWithSimulator,
          agreeOrKnownDivergence: prove.conformance.agreeOrKnownDivergence,
          from: { file: provePath, date: prove.date ?? null, commit: prove.commit ?? null },
        }
      : null,
    contract: prove ? prove.contract : null,
    flavours_over_cuda: prove
      ? Object.fromEntries(
          Object.entries(prove.sequences).map(([k, s]) => [
            k,
            { gpu: s.cuda.pass, simulator: s.sim.pass, sameCodes: s.sameCodes },
          ]),
        )
      : null,
    flavour_tables: flavoursPath ? readFlavourTables(flavoursPath) : null,
  };
}

/** `path`'s proof fields rewritten from the latest run's files, the rest of it as it was. */
export function withLatestProof(path: string): Record<string, unknown> {
  const file = JSON.parse(readText(path)) as Record<string, unknown>;
  return { ...file, ...proofFields(LATEST_PROOF, LATEST_FLAVOUR_TABLES) };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const path = process.argv[2];
  if (!path) {
    console.error('usage: proof-summary.js RESULT.json');
    process.exit(2);
  }
  writeFileSync(path, `${JSON.stringify(withLatestProof(path), null, 1)}\n`);
  console.log(`${path}: proof fields from ${LATEST_PROOF} and ${LATEST_FLAVOUR_TABLES}`);
}
