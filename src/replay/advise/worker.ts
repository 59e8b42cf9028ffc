/**
 * One of advise's worker threads (Note [Worker threads], advise-pool.ts):
 * it gets the snapshot and plan, shared, at its start, and replays each job
 * it is sent, telling the pool of its progress and its outcome.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ReplayError } from '../errors.js';
import { type ReplayInput, type ReplayJob, runJob, type WorkerMessage } from './pool.js';

const input = workerData as ReplayInput;
const port = parentPort;
if (port === null) throw new ReplayError('the advise worker runs only as a worker thread');
port.on('message', (job: ReplayJob) => {
  const outcome = runJob(input, job, (done) =>
    port.postMessage({ kind: 'progress', id: job.id, done } satisfies WorkerMessage),
  );
  port.postMessage({ kind: 'done', outcome } satisfies WorkerMessage);
});
