/**
 * Every example of README.md runs as written, against the package as a user
 * installs it (issue 16, item 6).
 *
 * The sources are built (tsc, into a temporary folder) and laid out as an
 * installed package: the package.json, dist/ just built, and every other
 * entry of its `files` copied, its dependencies linked. Each fenced block of
 * the README says by its language what it is:
 *
 *   js      a program: written to a file of an application beside the package and run in a child
 *           Node process, importing 'vmmkit' by name; it must exit 0 with nothing on stderr, and
 *           print what its `// prints: ...` comments say, in order
 *   text    output or usage; a `$ vmmkit ...` session over the package's own examples/ is run in
 *           the package folder and must print the lines shown
 *   sh      commands typed in a shell (npm, the examples: run by their own tests below)
 *   python  code for the user's PyTorch job
 *
 * A block of any other language, or none, fails the test, so no block is left out unsaid.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findCudaDriver } from '../../src/backends/cuda/driver.js';
import { builtIsCurrent } from '../support/source-files.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const README = readFileSync(join(root, 'README.md'), 'utf8');
const LANGUAGES = ['js', 'text', 'sh', 'python'];

interface Block {
  readonly lang: string;
  /** The line of the opening fence (1-based). */
  readonly line: number;
  readonly code: string;
}

function blocks(markdown: string): Block[] {
  const found: Block[] = [];
  let open: { lang: string; line: number; lines: string[] } | undefined;
  for (const [i, line] of markdown.split('\n').entries()) {
    if (open === undefined) {
      const fence = /^```(\S*)\s*$/.exec(line);
      if (fence) open = { lang: fence[1], line: i + 1, lines: [] };
    } else if (/^```\s*$/.test(line)) {
      found.push({ lang: open.lang, line: open.line, code: open.lines.join('\n') });
      open = undefined;
    } else open.lines.push(line);
  }
  if (open !== undefined) throw new Error(`README.md:${open.line}: a fence left open`);
  return found;
}

/** What a js block says it prints: each `// prints: X` comment, in order. */
function printed(code: string): string[] {
  return [...code.matchAll(/\/\/ prints: (.*)$/gm)].map((m) => m[1].trimEnd());
}

/** `$ vmmkit ...` sessions of a text block that name the package's examples: each command and its output. */
function sessions(code: string): { command: string[]; output: string[] }[] {
  const out: { command: string[]; output: string[] }[] = [];
  for (const line of code.split('\n')) {
    if (line.startsWith('$ ')) out.push({ command: line.slice(2).split(/\s+/), output: [] });
    else out.at(-1)?.output.push(line);
  }
  return out.filter((s) => s.command[0] === 'vmmkit' && s.command.some((a) => a.startsWith('examples/')));
}

const all = blocks(README);
const js = all.filter((b) => b.lang === 'js');
const shown = all.filter((b) => b.lang === 'text').flatMap((b) => sessions(b.code).map((s) => ({ ...s, b })));

const work = mkdtempSync(join(tmpdir(), 'vmmkit-readme-'));
const pkgDir = join(work, 'node_modules', 'vmmkit');
const app = join(work, 'app');
afterAll(() => rmSync(work, { recursive: true, force: true }));

beforeAll(() => {
  // The sources built as `npm run build` would, into the laid-out package (type checks are tsc's own job).
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { files: string[] };
  const config = join(work, 'tsconfig.json');
  writeFileSync(
    config,
    JSON.stringify({
      extends: join(root, 'tsconfig.json'),
      compilerOptions: {
        outDir: join(pkgDir, 'dist'),
        rootDir: root,
        typeRoots: [join(root, 'node_modules/@types')],
        noCheck: true,
        declaration: false,
        declarationMap: false,
        sourceMap: false,
      },
      include: [join(root, 'src')],
    }),
  );
  // A current dist/ (npm ci's prepare makes one) is the build; else the sources are built here.
  if (builtIsCurrent(root)) cpSync(join(root, 'dist/src'), join(pkgDir, 'dist/src'), { recursive: true });
  else {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    execFileSync(process.execPath, [tsc, '-p', config], { stdio: 'pipe' });
  }
  cpSync(join(root, 'package.json'), join(pkgDir, 'package.json'));
  for (const entry of pkg.files)
    if (entry !== 'dist/src') cpSync(join(root, entry), join(pkgDir, entry), { recursive: true });
  // The package's own dependencies, as npm would install them beside it.
  symlinkSync(join(root, 'node_modules'), join(pkgDir, 'node_modules'));
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), '{ "type": "module" }\n');
}, 180_000);

describe('README.md examples', () => {
  it('every block is marked by its language as a program to run, output, shell commands or Python', () => {
    const unmarked = all.filter((b) => !LANGUAGES.includes(b.lang)).map((b) => `line ${b.line}: '${b.lang}'`);
    expect(unmarked).toEqual([]);
    expect(js.length).toBeGreaterThanOrEqual(4);
    expect(shown.length).toBeGreaterThanOrEqual(2);
  });

  for (const block of js) {
    it(`the js block at README.md:${block.line} runs as written and prints what it says`, () => {
      const file = join(app, `readme-${block.line}.mjs`);
      writeFileSync(file, `${block.code}\n`);
      const run = spawnSync(process.execPath, [file], { cwd: app, encoding: 'utf8', timeout: 60_000 });
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      const expected = printed(block.code);
      expect(expected.length, 'a // prints: comment to hold the output to').toBeGreaterThan(0);
      expect(run.stdout.trimEnd().split('\n')).toEqual(expected);
    });
  }

  for (const { command, output, b } of shown) {
    it(`README.md:${b.line}: ${command.join(' ')} prints what the README shows`, () => {
      const main = join(pkgDir, 'dist/src/cli/main.js');
      const run = spawnSync(process.execPath, [main, ...command.slice(1)], {
        cwd: pkgDir,
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      expect(run.stdout.trimEnd().split('\n')).toEqual(output);
    });
  }
});

describe('the package holds what its README names', () => {
  it('every file the README links or names under examples/ is in the tarball', () => {
    const [packed] = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
        cwd: root,
        encoding: 'utf8',
      }),
    ) as [{ files: { path: string }[] }];
    const files = new Set(packed.files.map((f) => f.path));
    const linked = [...README.matchAll(/\]\(([^)#\s]+)\)/g)]
      .map((m) => m[1])
      .filter((t) => !/^[a-z]+:/.test(t));
    const examples = [...README.matchAll(/\bexamples\/[\w.-]+\.mjs\b/g)].map((m) => m[0]);
    expect(linked.length).toBeGreaterThan(0);
    expect(examples.length).toBeGreaterThan(0);
    const missing = [...new Set([...linked, ...examples])].filter((path) => !files.has(normalize(path)));
    expect(missing).toEqual([]);
  });

  it('examples/stitch.mjs runs from the installed package', () => {
    const run = spawnSync(process.execPath, ['examples/stitch.mjs'], { cwd: pkgDir, encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('stitch (two processes on a simulated H200):');
    // "stitched!" copied across the boundary: its last five bytes land in the exporter's memory.
    expect(run.stdout).toMatch(/exporter reads its chunk's start: +c +h +e +d +! (11 ){6}11\n/);
  });

  it.skipIf(findCudaDriver() !== undefined)(
    'examples/stitch.mjs --gpu without a GPU is one line, exit 1',
    () => {
      const run = spawnSync(process.execPath, ['examples/stitch.mjs', '--gpu'], {
        cwd: pkgDir,
        encoding: 'utf8',
      });
      expect(run.status).toBe(1);
      expect(run.stdout).toBe('');
      const lines = run.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^stitch --gpu: CUDA driver unavailable: /);
    },
  );
});
