/**
 * Every example of README.md and of every page under docs/ runs as written,
 * against the package as a user installs it (issue 16, item 6; issue 29).
 *
 * The sources are built (tsc, into a temporary folder) and laid out as an
 * installed package: the package.json, dist/ just built, and every other
 * entry of its `files` copied, its dependencies linked. Each fenced block of
 * a page says by its language what it is:
 *
 *   js      a program: written to a file of an application beside the package and run in a child
 *           Node process, importing 'vmmkit' by name; it must exit 0 with nothing on stderr, and
 *           print what its `// prints: ...` comments say, in order
 *   text    output or usage; each `$ vmmkit ...` session in it is run in the package folder and
 *           must print the lines shown: standard output and standard error in the order they
 *           were written, as a terminal shows them. The package's folder is shown as nothing (a path
 *           relative to it), a duration (`0.03 s`, `170.8 us`) matches any duration, a line `...`
 *           any run of lines, and a last line `[exit N]` states the exit code (else 0). A `$ `
 *           session of any other command fails, so none is left unrun. A usage line
 *           (`vmmkit COMMAND [--option ...]`, continued on indented lines) may name only options
 *           that `vmmkit COMMAND --help` lists
 *   sh      commands typed in a shell (npm, the examples: run by their own tests below)
 *   python  code for the user's PyTorch job
 *
 * A block of any other language, or none, fails the test, so no block is left out unsaid.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findCudaDriver } from '../../src/backends/cuda/driver.js';
import { builtIsCurrent } from '../support/source-files.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const README = readFileSync(join(root, 'README.md'), 'utf8');
const LANGUAGES = ['js', 'text', 'sh', 'python'];

/** README.md and every Markdown page under docs/, by their paths in the repository. */
function pages(): string[] {
  const found = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) found.push(path);
    }
  };
  walk('docs');
  return found;
}
const PAGES = pages();

interface Block {
  readonly lang: string;
  /** The line of the opening fence (1-based). */
  readonly line: number;
  readonly code: string;
}

function blocks(markdown: string, page = 'README.md'): Block[] {
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
  if (open !== undefined) throw new Error(`${page}:${open.line}: a fence left open`);
  return found;
}

/** What a js block says it prints: each `// prints: X` comment, in order. */
function printed(code: string): string[] {
  return [...code.matchAll(/\/\/ prints: (.*)$/gm)].map((m) => m[1].trimEnd());
}

interface Session {
  readonly command: string[];
  readonly output: string[];
  readonly exit: number;
}

/** The `$ ...` sessions of a text block: each command, the output shown and the exit code it states. */
function sessions(code: string): Session[] {
  const out: { command: string[]; output: string[] }[] = [];
  for (const line of code.split('\n')) {
    if (line.startsWith('$ ')) out.push({ command: line.slice(2).split(/\s+/), output: [] });
    else out.at(-1)?.output.push(line);
  }
  return out.map(({ command, output }) => {
    const stated = /^\[exit (\d+)\]$/.exec(output.at(-1) ?? '');
    return { command, output: stated ? output.slice(0, -1) : output, exit: stated ? Number(stated[1]) : 0 };
  });
}

/** Durations in output (`0.03 s`, `(in one thread, 2.9 s)`, `(170.8 us)`) differ from run to run: any matches any. */
const duration = (line: string): string => line.replace(/\b\d+(\.\d+)? (s|ms|us)\b/g, 'N $2');

/** Whether the lines printed are the lines shown, where a shown `...` stands for any run of lines. */
function matches(printed: readonly string[], shownLines: readonly string[]): boolean {
  const fits = (i: number, j: number): boolean => {
    if (j === shownLines.length) return i === printed.length;
    if (shownLines[j] === '...') {
      for (let k = i; k <= printed.length; k++) if (fits(k, j + 1)) return true;
      return false;
    }
    return i < printed.length && duration(printed[i]) === duration(shownLines[j]) && fits(i + 1, j + 1);
  };
  return fits(0, 0);
}

/** Usage lines of a text block outside sessions: each command and the options it names. */
function usages(code: string): { command: string; options: string[] }[] {
  const found: { command: string; options: string[] }[] = [];
  let inSession = false;
  for (const line of code.split('\n')) {
    if (line.startsWith('$ ')) inSession = true;
    if (inSession) continue;
    const head = /^vmmkit ([a-z]+)\b/.exec(line);
    if (head) found.push({ command: head[1], options: [] });
    else if (!/^\s/.test(line)) {
      found.push({ command: '', options: [] });
      continue;
    }
    found.at(-1)?.options.push(...[...line.matchAll(/(?<![\w-])--[a-z][a-z-]*/g)].map((m) => m[0]));
  }
  return found.filter((u) => u.command !== '');
}

const all = PAGES.flatMap((page) =>
  blocks(page === 'README.md' ? README : readFileSync(join(root, page), 'utf8'), page).map((b) => ({
    ...b,
    page,
  })),
);
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

describe('README.md and docs/ examples', () => {
  it('every block is marked by its language as a program to run, output, shell commands or Python', () => {
    const unmarked = all
      .filter((b) => !LANGUAGES.includes(b.lang))
      .map((b) => `${b.page}:${b.line}: '${b.lang}'`);
    expect(unmarked).toEqual([]);
    expect(PAGES.length).toBeGreaterThan(10);
    expect(js.filter((b) => b.page === 'README.md').length).toBeGreaterThanOrEqual(1);
    expect(js.length).toBeGreaterThanOrEqual(4);
    expect(shown.filter((s) => s.b.page === 'README.md').length).toBeGreaterThanOrEqual(2);
  });

  it('the README stays a page read in one sitting, its quick start the two commands CI runs', () => {
    expect(Buffer.byteLength(README)).toBeLessThanOrEqual(15 * 1024);
    const quick = README.slice(README.indexOf('\n## Quick start\n'));
    const first = blocks(quick)[0];
    expect(first.lang).toBe('sh');
    expect(first.code).toBe('npm ci && npm run demo\nnpm ci && npm test');
  });

  it('every `$ ` session shown is a vmmkit command, run below', () => {
    const others = shown.filter((s) => s.command[0] !== 'vmmkit').map((s) => `${s.b.page}:${s.b.line}`);
    expect(others).toEqual([]);
  });

  it('every usage line names only options its command takes', () => {
    const unknown: string[] = [];
    const helps = new Map<string, string>();
    for (const b of all.filter((x) => x.lang === 'text'))
      for (const { command, options } of usages(b.code)) {
        if (!helps.has(command)) {
          const run = spawnSync(process.execPath, [join(pkgDir, 'dist/src/cli/main.js'), command, '--help'], {
            cwd: pkgDir,
            encoding: 'utf8',
          });
          expect(run.status, `vmmkit ${command} --help`).toBe(0);
          helps.set(command, run.stdout);
        }
        const help = helps.get(command) as string;
        for (const option of options)
          if (!new RegExp(`(?<![\\w-])${option}(?![\\w-])`).test(help))
            unknown.push(`${b.page}:${b.line}: vmmkit ${command} ${option}`);
      }
    expect(unknown).toEqual([]);
    expect(helps.size).toBeGreaterThanOrEqual(5);
  });

  it('the README walkthrough answers from the recording reproduced, first', () => {
    const replay = shown.find((s) => s.b.page === 'README.md' && s.command[1] === 'replay');
    const answer = (replay?.output ?? []).filter((l) => !l.startsWith('note: '));
    expect(answer[0]).toMatch(/^as recorded: reproduced \(peak .*, OOM at event [\d,]+: .*\)$/);
    expect(answer[1]).toMatch(/^cap: inferred from the recording: /);
    expect(shown.some((s) => s.b.page === 'README.md' && s.command[1] === 'advise')).toBe(true);
    expect(README).not.toMatch(/late start or a wrapped ring buffer is fine/);
  });

  for (const block of js) {
    it(`the js block at ${block.page}:${block.line} runs as written and prints what it says`, () => {
      const file = join(app, `${block.page.replace(/[/.]/g, '-')}-${block.line}.mjs`);
      writeFileSync(file, `${block.code}\n`);
      const run = spawnSync(process.execPath, [file], { cwd: app, encoding: 'utf8', timeout: 60_000 });
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      const expected = printed(block.code);
      expect(expected.length, 'a // prints: comment to hold the output to').toBeGreaterThan(0);
      expect(run.stdout.trimEnd().split('\n')).toEqual(expected);
    });
  }

  for (const { command, output, exit, b } of shown.filter((s) => s.command[0] === 'vmmkit')) {
    it(`${b.page}:${b.line}: ${command.join(' ')} prints what the page shows`, () => {
      // Standard output and standard error into one file, in the order written, as a terminal shows them.
      const main = join(pkgDir, 'dist/src/cli/main.js');
      const both = join(work, `session-${b.page.replace(/\W/g, '-')}-${b.line}-${command[1]}.txt`);
      const fd = openSync(both, 'w');
      const run = spawnSync(process.execPath, [main, ...command.slice(1)], {
        cwd: pkgDir,
        stdio: ['ignore', fd, fd],
        timeout: 120_000,
      });
      closeSync(fd);
      const text = readFileSync(both, 'utf8');
      const printed = text === '' ? [] : text.trimEnd().replaceAll(`${pkgDir}/`, '').split('\n');
      if (!matches(printed, output)) expect(printed.join('\n')).toBe(output.join('\n'));
      expect(run.status).toBe(exit);
    }, 150_000);
  }
});

describe('the pages link what is there', () => {
  it('every relative link of a page under docs/ names a file of the repository', () => {
    const missing: string[] = [];
    for (const page of PAGES.filter((p) => p !== 'README.md')) {
      const markdown = readFileSync(join(root, page), 'utf8');
      for (const m of markdown.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(m[1])) continue;
        const target = normalize(join(dirname(page), m[1]));
        if (!existsSync(join(root, target))) missing.push(`${page}: ${m[1]}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('every page under docs/ is linked from the README or from another page', () => {
    const linked = new Set<string>();
    for (const page of PAGES) {
      const markdown = page === 'README.md' ? README : readFileSync(join(root, page), 'utf8');
      for (const m of markdown.matchAll(/\]\(([^)#\s]+\.md)(#[^)]*)?\)/g))
        if (!/^[a-z]+:/.test(m[1])) linked.add(normalize(join(dirname(page), m[1])));
    }
    const orphans = PAGES.filter((p) => p !== 'README.md' && !linked.has(p)).map((p) =>
      relative(root, join(root, p)),
    );
    expect(orphans).toEqual([]);
  });
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
    const examples = [...README.matchAll(/\bexamples\/[\w.-]+\.(?:mjs|pickle\.gz)\b/g)].map((m) => m[0]);
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
