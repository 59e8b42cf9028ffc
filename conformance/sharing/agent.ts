/**
 * A child process that is one peer of a sharing scenario (os-harness.ts
 * starts it with child_process.fork): it makes one front-end process over the
 * real CUDA backend (or, to rehearse without a GPU, over the fake driver),
 * says `ready` with its pid, then answers each step the parent sends over the
 * IPC channel. Descriptors come from other processes by pidfd_getfd (takeFd).
 *
 *   node dist/conformance/sharing/agent.js cuda|hip|acl [cuda|fake-cuda]
 */
import { takeFd } from '../../src/backends/cuda/os-fd.js';
import { createAcl, createCuda, createHip } from '../../src/index.js';
import { createFakeDriver } from '../gpu/fake-driver.js';
import { type Answer, aclPeer, cudaPeer, type FlavourName, hipPeer, type PeerSteps } from './peer.js';

interface Request {
  readonly id: number;
  readonly step: keyof PeerSteps;
  readonly args: unknown[];
}

const flavour = process.argv[2] as FlavourName;
const cuda = process.argv[3] === 'fake-cuda' ? { driver: createFakeDriver() } : {};
const options = { backend: 'cuda' as const, cuda };
const steps: PeerSteps =
  flavour === 'cuda'
    ? cudaPeer(createCuda(options), takeFd)
    : flavour === 'hip'
      ? hipPeer(createHip(options), takeFd)
      : aclPeer(createAcl(options));

const send = (m: unknown) => process.send?.(m);
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
send({ ready: process.pid });
