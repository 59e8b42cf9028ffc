/**
 * docs/ARCHITECTURE.md indexes every `Note [Name]` of src (issue 29): a note
 * named in the code and missing from the index fails here, and so does an
 * entry whose note is named nowhere in src. `node scripts/notes-index.mjs`
 * rewrites the index.
 */
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain script of the repository, without declarations
import { notesInSource, notesListed, PAGE } from '../../scripts/notes-index.mjs';

const root = new URL('../../', import.meta.url);
const page = readFileSync(new URL(PAGE, root), 'utf8');
const inSource: Map<string, string[]> = notesInSource();
const listed: string[] = notesListed(page);

describe('the index of notes in docs/ARCHITECTURE.md', () => {
  it('finds notes in src', () => expect(inSource.size).toBeGreaterThan(100));

  it('lists every note named in src', () => {
    const missing = [...inSource.keys()].filter((name) => !listed.includes(name));
    expect(missing, 'run node scripts/notes-index.mjs').toEqual([]);
  });

  it('lists only notes named in src, each once', () => {
    expect(
      listed.filter((name) => !inSource.has(name)),
      'run node scripts/notes-index.mjs',
    ).toEqual([]);
    expect(new Set(listed).size).toBe(listed.length);
  });

  it('names, for each note, files that hold it', () => {
    const stale: string[] = [];
    for (const m of page.matchAll(/^\| \[([^\]]+)\] \| (.*) \|$/gm))
      for (const file of [...m[2].matchAll(/`([^`]+)`/g)].map((f) => f[1])) {
        const url = new URL(file, root);
        if (!existsSync(url) || !readFileSync(url, 'utf8').includes(`Note [${m[1]}]`))
          stale.push(`${m[1]}: ${file}`);
      }
    expect(stale, 'run node scripts/notes-index.mjs').toEqual([]);
  });
});
