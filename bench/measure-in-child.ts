import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Runs a benchmark (`script`: its import.meta.url) again as `--measure ...args` in a fresh Node
 * process, so that the peak RSS it reports is that measurement's own; the measurement is the last
 * line the child prints, as JSON. `what` names the run in the error of one that failed.
 */
export function measureInChild<T>(script: string, args: readonly string[], what: string): T {
  const r = spawnSync(process.execPath, [fileURLToPath(script), '--measure', ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  });
  if (r.status !== 0) throw new Error(`the ${what} run failed (exit ${r.status}): ${r.stderr.trim()}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as T;
}
