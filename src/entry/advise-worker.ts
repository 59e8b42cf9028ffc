/**
 * The module of advise's worker threads (Note [Worker threads],
 * src/replay/advise/pool.ts): it serves the jobs with the processes the
 * entry and the command line give advise in their own thread, a simulated
 * H200 machine per run (replay-processes.ts's adviseWorkerModule finds it).
 */
import { serveAdviseJobs } from '../replay/advise/worker.js';
import { startOnSimulator } from './replay-processes.js';

serveAdviseJobs(startOnSimulator());
