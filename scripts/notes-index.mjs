#!/usr/bin/env node
/**
 * The index of the `Note [Name]` comments in src/, as docs/ARCHITECTURE.md
 * holds it between its two index markers: every name, and the file (or
 * files) where it is written out. Found by grepping, not kept by hand.
 *
 *   node scripts/notes-index.mjs    rewrite the index in docs/ARCHITECTURE.md
 *
 * test/package/notes-index.test.ts holds the page to src: every Note named
 * in src is in the index, and every entry of the index is named in src.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
export const PAGE = 'docs/ARCHITECTURE.md';
export const BEGIN = '<!-- notes index: written by scripts/notes-index.mjs -->';
export const END = '<!-- end of the notes index -->';

function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') || e.name.endsWith('.cc') || e.name.endsWith('.c') ? [path] : [];
  });
}

/**
 * Every note named in src: name -> the files that write it out (a comment
 * line that starts with it), or, for a note only ever cited, the files
 * that cite it.
 */
export function notesInSource() {
  const written = new Map();
  const cited = new Map();
  const add = (map, name, file) => map.set(name, new Set([...(map.get(name) ?? []), file]));
  for (const path of sources(join(root, 'src'))) {
    const file = relative(root, path);
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      for (const m of line.matchAll(/Note \[([^\]]+)\]/g)) add(cited, m[1], file);
      const head = /^\s*(?:\/?\*+|\/\/)\s*Note \[([^\]]+)\]/.exec(line);
      if (head) add(written, head[1], file);
    }
  }
  const notes = new Map();
  for (const [name, files] of cited) notes.set(name, [...(written.get(name) ?? files)].sort());
  return new Map([...notes].sort(([a], [b]) => a.toLowerCase().localeCompare(b.toLowerCase())));
}

/** The index as Markdown: one row per note. */
export function notesIndex() {
  const rows = [...notesInSource()].map(
    ([name, files]) => `| [${name}] | ${files.map((f) => `\`${f}\``).join(', ')} |`,
  );
  return [BEGIN, '', '| Note | written in |', '|---|---|', ...rows, '', END].join('\n');
}

/** The names the page's index lists. */
export function notesListed(page) {
  const start = page.indexOf(BEGIN);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${PAGE}: the notes index markers are missing`);
  return [...page.slice(start, end).matchAll(/^\| \[([^\]]+)\] \|/gm)].map((m) => m[1]);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const path = join(root, PAGE);
  const page = readFileSync(path, 'utf8');
  const start = page.indexOf(BEGIN);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${PAGE}: the notes index markers are missing`);
  writeFileSync(path, `${page.slice(0, start)}${notesIndex()}${page.slice(end + END.length)}`);
  console.log(`wrote the notes index of ${PAGE} (${notesInSource().size} notes)`);
}
