import { execFileSync } from 'node:child_process';

/** The first GPU's name and driver version as nvidia-smi reports them ('unknown' where there is none). */
export function gpuInfo(): { gpu: string; driver: string } {
  try {
    const line = execFileSync('nvidia-smi', ['--query-gpu=name,driver_version', '--format=csv,noheader'], {
      encoding: 'utf8',
    })
      .split('\n')[0]
      .split(',')
      .map((s) => s.trim());
    return { gpu: line[0], driver: line[1] };
  } catch {
    return { gpu: 'unknown', driver: 'unknown' };
  }
}
