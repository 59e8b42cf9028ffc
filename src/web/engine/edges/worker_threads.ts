/** node:worker_threads in the page (Note [Browser edges], fs.ts): none, so the pool runs its jobs in this thread. */
export class Worker {
  constructor() {
    throw new Error('the page starts no worker threads (advise runs its replays in the engine worker)');
  }
}
export const parentPort = null;
export const workerData = undefined;
