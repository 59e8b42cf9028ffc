/**
 * docs/FIDELITY.md is written by scripts/fidelity-page.mjs from the result
 * files, never by hand (issue 29): the committed page must be what the
 * script writes from the files as they are now.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain script of the repository, without declarations
import { fidelityPage } from '../../scripts/fidelity-page.mjs';

describe('docs/FIDELITY.md', () => {
  it('is what scripts/fidelity-page.mjs writes from the result files now', () => {
    const committed = readFileSync(new URL('../../docs/FIDELITY.md', import.meta.url), 'utf8');
    expect(committed, 'run node scripts/fidelity-page.mjs').toBe(fidelityPage());
  });

  /**
   * Each row of the table whose header starts `| header |` has its six cells, and each cell given a
   * pattern (by column) matches it; returns how many rows there are.
   */
  const checkTable = (header: string, patterns: Record<number, RegExp>): number => {
    const lines = (fidelityPage() as string).split('\n');
    let rows = 0;
    for (let i = lines.findIndex((l) => l.startsWith(`| ${header} |`)) + 2; lines[i]?.startsWith('|'); i++) {
      const cells = lines[i].split(' | ');
      expect(cells, lines[i]).toHaveLength(6);
      for (const [column, pattern] of Object.entries(patterns))
        expect(cells[Number(column)]).toMatch(pattern);
      rows++;
    }
    return rows;
  };

  it('gives each suite its cases, agreements, listed gaps, date and result file', () => {
    const rows = checkTable('suite', {
      1: /^\d+$/,
      2: /^\d+/,
      4: /\d\d:\d\d|every test run/,
      5: /`[\w./-]+`/,
    });
    expect(rows).toBeGreaterThanOrEqual(8);
  });

  it('gives each speed target its figure, target, verdict, date and result file', () => {
    const rows = checkTable('what', {
      1: /^\d/,
      3: /^(yes|no)$/,
      4: /\d\d:\d\d UTC, load/,
      5: /`bench\/results\/[\w-]+\.json`/,
    });
    expect(rows).toBeGreaterThanOrEqual(6);
  });
});
