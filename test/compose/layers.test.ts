import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sourceFiles } from '../support/source-files.js';

/**
 * The layering DESIGN.md draws, checked on the source: each folder may import
 * only the layers beneath it. The composition root (src/compose) and the
 * package entries (src/index.ts and the subpaths in src/entry: `vmmkit/core`
 * and `vmmkit/sim` export core and the simulator themselves) are the only
 * places that see the backends. src/entry is the top of the library: it
 * composes (processes, the snapshot wing's starters and plans, advise's
 * worker thread) and may import every layer; only the CLI stands above it.
 * An import() counts as an import (the CLI loads each command when it runs).
 */
const ALLOWED: Record<string, readonly string[]> = {
  'c-api': ['c-api'],
  util: ['util'],
  core: ['core', 'util', 'backend'],
  // The contract's value types live in backend/types.ts: nothing in the backend reaches up into core.
  backend: ['backend', 'util'],
  backends: ['backends', 'backend', 'core', 'util', 'c-api'],
  compose: ['compose', 'backends', 'backend', 'core'],
  // A front end takes the process it is given (issue 29): it never makes one, so never sees compose.
  flavors: ['flavors', 'core', 'util', 'backend', 'c-api'],
  alloc: ['alloc', 'core', 'util'],
  // The snapshot wing and the report take a way to start a process and a plan from the top (issue 29):
  // they never see compose.
  replay: ['replay', 'alloc', 'core', 'util'],
  report: ['report', 'replay', 'alloc', 'core', 'util'],
  // The top (`vmmkit/replay` and `vmmkit/report` included): it gives the layers beneath their processes.
  entry: ['entry', 'flavors', 'alloc', 'replay', 'report', 'core', 'compose', 'backend', 'backends', 'util'],
  cli: ['cli', 'entry', 'flavors', 'alloc', 'replay', 'report', 'core', 'compose', 'util'],
};

/** Whether `file` imports anything of src/compose. */
function importsCompose(file: string): boolean {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from |import\()'(\.[^']+)'/g)].some(
    ([, spec]) => relative('src', join(file, '..', spec)).split('/')[0] === 'compose',
  );
}

describe('layers import only what lies beneath them', () => {
  it('no folder of src reaches past its layer', () => {
    const wrong: string[] = [];
    for (const file of sourceFiles('src')) {
      const layer = relative('src', file).split('/')[0];
      const allowed = ALLOWED[layer];
      if (allowed === undefined) continue; // src/index.ts: the package entry re-exports everything
      const text = readFileSync(file, 'utf8');
      for (const [, spec] of text.matchAll(/(?:from |import\()'(\.[^']+)'/g)) {
        const target = relative('src', join(file, '..', spec)).split('/')[0];
        if (!allowed.includes(target)) wrong.push(`${file} imports ${spec} (${layer} -> ${target})`);
      }
    }
    expect(wrong).toEqual([]);
  });

  // Issue 29's last arrow (the engine's default process) is gone: composition happens only at the top.
  it('nothing beneath the top imports the composition root', () => {
    const top = ['compose', 'entry', 'cli', 'web'];
    const below = [...sourceFiles('src')].filter((f) => {
      const layer = relative('src', f).split('/')[0];
      return !top.includes(layer) && f !== join('src', 'index.ts');
    });
    expect(below.filter(importsCompose)).toEqual([]);
  });

  // The snapshot wing's rooms: reading knows nothing of replay, the engine
  // nothing of advise, so a reader change never reaches past its room.
  it('the rooms of src/replay import only the rooms beneath them', () => {
    const ROOMS: Record<string, readonly string[]> = {
      read: ['read'],
      engine: ['engine', 'read'],
      advise: ['advise', 'engine', 'read'],
      analyse: ['analyse', 'advise', 'engine', 'read'],
    };
    const wrong: string[] = [];
    for (const file of sourceFiles('src/replay')) {
      const room = relative('src/replay', file).split('/')[0];
      const allowed = ROOMS[room];
      if (allowed === undefined) continue; // index.ts and errors.ts serve every room
      const text = readFileSync(file, 'utf8');
      for (const [, spec] of text.matchAll(/(?:from |import\()'(\.[^']+)'/g)) {
        const path = relative('src', join(file, '..', spec));
        if (!path.startsWith('replay/')) continue;
        const target = path.split('/')[1];
        if (target.endsWith('.js')) continue; // replay/errors.js
        if (!allowed.includes(target)) wrong.push(`${file} imports ${spec} (${room} -> ${target})`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
