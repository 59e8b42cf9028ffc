/**
 * One of advise's worker threads (Note [Worker threads], pool.ts): it gets
 * the snapshot and plan, shared, at its start, and replays the jobs it is
 * sent side by side (Note [Best first]), telling the pool of their progress
 * and of each outcome as it ends. It runs slices for a few milliseconds at
 * a time (Turns), then lets the jobs sent meanwhile in. The thread's module is the
 * top's (src/entry/advise-worker.ts), which gives it the way to start a
 * process: a thread cannot be handed one.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { StartProcess } from '../engine/process-start.js';
import { ReplayError } from '../errors.js';
import { OpenJob, type ReplayInput, type ReplayJob, Turns, type WorkerMessage } from './pool.js';

/** Serve the jobs this worker thread is sent, each run's process started by `startProcess`. */
export function serveAdviseJobs(startProcess: StartProcess): void {
  const input = workerData as ReplayInput;
  const port = parentPort;
  if (port === null) throw new ReplayError('the advise worker runs only as a worker thread');
  const turns = new Turns(
    (outcome) => port.postMessage({ kind: 'done', outcome } satisfies WorkerMessage),
    setImmediate,
  );
  port.on('message', (job: ReplayJob) => {
    turns.add(
      new OpenJob(input, job, startProcess, (done) =>
        port.postMessage({ kind: 'progress', id: job.id, done } satisfies WorkerMessage),
      ),
    );
  });
}
