/**
 * One of advise's worker threads (Note [Worker threads], pool.ts): it gets
 * the snapshot and plan, shared, at its start, and replays the jobs it is
 * sent side by side (Note [Best first]), telling the pool of their progress
 * and of each outcome as it ends. It runs slices for a few milliseconds at
 * a time, then lets the jobs sent meanwhile in. The thread's module is the
 * top's (src/entry/advise-worker.ts), which gives it the way to start a
 * process: a thread cannot be handed one.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { StartProcess } from '../engine/process-start.js';
import { ReplayError } from '../errors.js';
import { BestFirst, OpenJob, type ReplayInput, type ReplayJob, type WorkerMessage } from './pool.js';

/** How long the worker runs slices before it takes its messages. */
const TURN_MS = 10;

/** Serve the jobs this worker thread is sent, each run's process started by `startProcess`. */
export function serveAdviseJobs(startProcess: StartProcess): void {
  const input = workerData as ReplayInput;
  const port = parentPort;
  if (port === null) throw new ReplayError('the advise worker runs only as a worker thread');
  const running = new BestFirst();
  let scheduled = false;
  const turn = () => {
    scheduled = false;
    const until = performance.now() + TURN_MS;
    while (running.size > 0 && performance.now() < until) {
      const outcome = running.step();
      if (outcome !== undefined) port.postMessage({ kind: 'done', outcome } satisfies WorkerMessage);
    }
    if (running.size > 0) schedule();
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(turn);
  };
  port.on('message', (job: ReplayJob) => {
    running.add(
      new OpenJob(input, job, startProcess, (done) =>
        port.postMessage({ kind: 'progress', id: job.id, done } satisfies WorkerMessage),
      ),
    );
    schedule();
  });
}
