import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { sourceFiles } from '../support/source-files.js';

/**
 * Note [Declarations a user compiles] (src/index.ts): the built declarations
 * type-check in a user's project as it usually is, a plain es2022 tsconfig
 * with skipLibCheck false and Node's types, through every subpath. A tiny
 * consumer project finds the package by name (node_modules/vmmkit links to
 * this repository, so `exports` resolves to dist/) and the repository's tsc
 * checks it. dist is built by `npm ci` (the `prepare` script); the test is
 * skipped when dist is older than the sources it was built from.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  exports: Record<string, string | { types: string }>;
};

/** Whether every source in src has its declaration in dist, built after it. */
function distIsCurrent(): boolean {
  if (!existsSync(join(root, 'dist/src'))) return false;
  for (const source of sourceFiles(join(root, 'src'))) {
    if (source.endsWith('.d.ts')) continue; // a declaration of its own (src/web/vite-env.d.ts) is not emitted
    const built = join(root, 'dist', relative(root, source).replace(/\.ts$/, '.d.ts'));
    if (!existsSync(built) || statSync(built).mtimeMs < statSync(source).mtimeMs) return false;
  }
  return true;
}

const subpaths = Object.keys(pkg.exports).filter((s) => typeof pkg.exports[s] !== 'string');
const specifier = (subpath: string) => (subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`);

describe.skipIf(!distIsCurrent())('the declarations in dist (skipped unless dist/ is current)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vmmkit-consumer-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('compile in a plain es2022 project with skipLibCheck false and @types/node, through every subpath', () => {
    mkdirSync(join(dir, 'node_modules/@types'), { recursive: true });
    symlinkSync(root, join(dir, 'node_modules', pkg.name), 'dir');
    symlinkSync(join(root, 'node_modules/@types/node'), join(dir, 'node_modules/@types/node'), 'dir');
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name: 'consumer', type: 'module', private: true }),
    );
    // What a user's tsconfig usually says; no lib beyond the target's, nothing skipped.
    const tsconfig = {
      compilerOptions: {
        target: 'es2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        strict: true,
        skipLibCheck: false,
        noEmit: true,
        types: ['node'],
      },
      include: ['index.ts'],
    };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
    const imports = subpaths.map((s, i) => `import * as m${i} from '${specifier(s)}';`);
    const program = [
      ...imports,
      `import { createCuda, createRuntime, inspect } from '${pkg.name}';`,
      // A user's own code with the package's disposables.
      'const rt = createRuntime();',
      'const r = rt.reserve(2 * 1024 * 1024);',
      'r[Symbol.dispose]();',
      'const cu = createCuda();',
      'const text: string = inspect(cu);',
      'cu[Symbol.dispose]();',
      `console.log(text, ${subpaths.map((_, i) => `m${i}`).join(', ')});`,
    ];
    writeFileSync(join(dir, 'index.ts'), `${program.join('\n')}\n`);
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    let out = '';
    try {
      execFileSync(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8', cwd: dir });
    } catch (e) {
      out = String((e as { stdout?: string }).stdout ?? e);
    }
    expect(out).toBe('');
  });

  it("bring the lib of Disposable wherever they name it, so a user's lib need not have it", () => {
    const missing: string[] = [];
    for (const file of sourceFiles(join(root, 'dist/src'))) {
      const text = readFileSync(file, 'utf8');
      // The declarations themselves, not their doc comments.
      const code = text.replace(/\/\*[\s\S]*?\*\//g, '');
      if (!/\bDisposable\b|Symbol\.dispose/.test(code)) continue;
      if (!text.startsWith('/// <reference lib="esnext.disposable"')) missing.push(relative(root, file));
    }
    expect(missing).toEqual([]);
  });
});
