import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as allocErrors from '../../src/alloc/errors.js';
import * as cliErrors from '../../src/cli/errors.js';
import * as replayErrors from '../../src/replay/errors.js';
import * as reportErrors from '../../src/report/errors.js';
import * as utilErrors from '../../src/util/errors.js';
import { sourceFiles } from '../support/source-files.js';

/**
 * Each layer outside core and the front ends has one errors module, where
 * its error classes live (re-exported where they were once defined), and
 * throws only those, or a lower layer's, on bad input: no bare Error,
 * RangeError or TypeError. Each class has the name it is exported by and a
 * one-line message.
 */
const MODULES: Record<string, Record<string, unknown>> = {
  alloc: allocErrors,
  replay: replayErrors,
  report: reportErrors,
  util: utilErrors,
  cli: cliErrors,
};

/** Constructor arguments for the classes that take more than a message. */
const ARGUMENTS: Record<string, unknown[]> = {
  AllocatorOutOfMemoryError: [1024, 0, 2048, 512],
  GrowPastMaximumError: [4096, 2048],
  SnapshotError: ['unreadable', 'cannot read x.pickle'],
  PickleError: ['truncated', 'the pickle ends early', 7],
};

/** The one bare throw left: a handle table past its 2^24 live slots is core's limit, not bad input (util/handle-table.ts). */
const ALLOWED_BARE = ["src/util/handle-table.ts: throw new RangeError('too many live handles')"];

describe('one errors module per layer', () => {
  it.each(Object.keys(MODULES))(
    '%s: every class is an Error with its own name and a one-line message',
    (layer) => {
      const classes = Object.entries(MODULES[layer]);
      expect(classes.length).toBeGreaterThan(0);
      for (const [name, X] of classes) {
        expect(typeof X, name).toBe('function');
        const e = Reflect.construct(
          X as new (
            ...a: unknown[]
          ) => Error,
          ARGUMENTS[name] ?? ['something is off'],
        );
        expect(e, name).toBeInstanceOf(Error);
        expect(e.name, name).toBe(name);
        expect(e.message, name).not.toBe('');
        expect(e.message, name).not.toContain('\n');
      }
    },
  );

  // Note [One error factory per layer]: each class is made by errorClass under its own name, or extends
  // another class of its module (which is).
  it.each(Object.keys(MODULES))('%s: every class comes from the one factory', (layer) => {
    const text = readFileSync(join('src', layer, 'errors.ts'), 'utf8');
    const classes = [...text.matchAll(/^export class (\w+) extends (.+?) \{/gm)];
    expect(classes.map(([, name]) => name).sort()).toEqual(Object.keys(MODULES[layer]).sort());
    for (const [, name, base] of classes) {
      const fromFactory = base === `errorClass('${name}')` || base === `errorClass('${name}', RangeError)`;
      const fromSibling = new RegExp(`^errorClass\\('${name}', (\\w+)\\)$`).exec(base ?? '')?.[1];
      expect(
        fromFactory || (fromSibling !== undefined && fromSibling in MODULES[layer]),
        `${name} extends ${base}`,
      ).toBe(true);
    }
  });

  it.each(Object.keys(MODULES))(
    '%s: error classes are defined only in its errors module, and nothing throws a bare one',
    (layer) => {
      const defined: string[] = [];
      const bare: string[] = [];
      for (const file of sourceFiles(join('src', layer))) {
        const text = readFileSync(file, 'utf8');
        if (!file.endsWith('/errors.ts'))
          for (const [, name] of text.matchAll(/\bclass (\w+) extends \w*Error\b/g))
            defined.push(`${file}: ${name}`);
        for (const [line] of text.matchAll(/throw new (?:Range|Type)?Error\([^)]*\)?/g)) {
          const at = `${file}: ${line}`;
          if (!ALLOWED_BARE.includes(at)) bare.push(at);
        }
      }
      expect(defined).toEqual([]);
      expect(bare).toEqual([]);
    },
  );
});
