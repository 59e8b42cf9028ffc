/**
 * A benchmark's tracked result, bench/results/NAME.json (the README cites it), written only when
 * asked (--write), so that a user's run leaves the tree clean.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';

/** The commit a run measures: read it at the run's start (a commit made during the run is not what ran). */
export function headCommit(): string {
  try {
    const repo = fileURLToPath(new URL('../../', import.meta.url));
    return execFileSync('git', ['-C', repo, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

/** What a result says of its run: the script, when, and the machine (cores: those the figures had). */
export function runFacts(script: string, cores = cpus().length) {
  return {
    script,
    date: new Date().toISOString(),
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores,
  };
}

export function writeResult(name: string, result: object): void {
  writeFileSync(
    new URL(`../../bench/results/${name}.json`, import.meta.url),
    `${JSON.stringify(result, null, 2)}\n`,
  );
}
