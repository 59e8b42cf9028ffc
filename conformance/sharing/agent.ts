/**
 * A child process that is one peer of a sharing scenario (os-harness.ts
 * starts it with child_process.fork): it makes one front-end process over the
 * real CUDA backend (or a served simulated machine, or the fake driver),
 * says `ready` with its pid, then answers each step the parent sends over the
 * IPC channel. Descriptors come from other processes by pidfd_getfd (takeFd).
 *
 *   node dist/conformance/sharing/agent.js cuda|hip|acl [cuda|fake-cuda|machine=DIR]
 */
import { takeFd } from '../../src/backends/cuda/os-fd.js';
import { connectMachine } from '../../src/backends/sim/remote-process.js';
import { createAcl, createCuda, createHip } from '../../src/index.js';
import { createFakeDriver } from '../gpu/fake-driver.js';
import { type Answer, aclPeer, cudaPeer, type FlavourName, hipPeer, type PeerSteps } from './peer.js';

interface Request {
  readonly id: number;
  readonly step: keyof PeerSteps;
  readonly args: unknown[];
}

const flavour = process.argv[2] as FlavourName;
const where = process.argv[3] ?? 'cuda';
// 'machine=DIR': a process of the simulated machine served at DIR (serveMachine), fds passed through it.
const served = where.startsWith('machine=') ? connectMachine(where.slice('machine='.length)) : undefined;
const options = served
  ? { backend: served }
  : { backend: 'cuda' as const, cuda: where === 'fake-cuda' ? { driver: createFakeDriver() } : {} };
const take = served ? (pid: number, fd: number) => served.takeFd(pid, fd) : takeFd;
const steps: PeerSteps =
  flavour === 'cuda'
    ? cudaPeer(createCuda(options), take)
    : flavour === 'hip'
      ? hipPeer(createHip(options), take)
      : aclPeer(createAcl(options));

process.on('message', (m: Request) => {
  let answer: Answer;
  try {
    answer = (steps[m.step] as (...a: unknown[]) => Answer)(...m.args);
  } catch (e) {
    answer = { code: -1, props: { threw: e instanceof Error ? (e.stack ?? e.message) : String(e) } };
  }
  // After `exit` the process ends as soon as the answer is sent.
  process.send?.({ id: m.id, answer }, () => {
    if (m.step === 'exit') process.exit(0);
  });
});
// A parent that goes away (a test runner that ended or was killed) takes its peers with it.
process.on('disconnect', () => process.exit(1));
process.send?.({ ready: process.pid });
