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

  /** The rows of the table whose header starts `| header |`. */
  const tableRows = (header: string) => {
    const lines = (fidelityPage() as string).split('\n');
    const start = lines.findIndex((l) => l.startsWith(`| ${header} |`));
    const rows: string[] = [];
    for (let i = start + 2; i < lines.length && lines[i].startsWith('|'); i++) rows.push(lines[i]);
    return rows;
  };

  it('gives each suite its cases, agreements, listed gaps, date and result file', () => {
    const rows = tableRows('suite');
    expect(rows.length).toBeGreaterThanOrEqual(8);
    for (const row of rows) {
      const cells = row.split(' | ');
      expect(cells).toHaveLength(6);
      expect(cells[1]).toMatch(/^\d+$/);
      expect(cells[2]).toMatch(/^\d+/);
      expect(cells[4]).toMatch(/\d\d:\d\d|every test run/);
      expect(cells[5]).toMatch(/`[\w./-]+`/);
    }
  });

  it('gives each speed target its figure, target, verdict, date and result file', () => {
    const rows = tableRows('what');
    expect(rows.length).toBeGreaterThanOrEqual(6);
    for (const row of rows) {
      const cells = row.split(' | ');
      expect(cells).toHaveLength(6);
      expect(cells[1]).toMatch(/^\d/);
      expect(cells[3]).toMatch(/^(yes|no)$/);
      expect(cells[4]).toMatch(/\d\d:\d\d UTC, load/);
      expect(cells[5]).toMatch(/`bench\/results\/[\w-]+\.json`/);
    }
  });
});
