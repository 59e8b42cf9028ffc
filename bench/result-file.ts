/**
 * A benchmark's tracked result, bench/results/NAME.json (the README cites it), written only when
 * asked (--write), so that a user's run leaves the tree clean.
 */
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';

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
