/**
 * Peers as real OS processes: each one a child (agent.js) with its own
 * vmmkit process over the CUDA backend, reached over Node's IPC channel.
 * Killing one is SIGKILL: no dispose, no exit handlers, as a crash.
 */
import { type ChildProcess, fork } from 'node:child_process';
import type { Answer, FlavourName } from './peer.js';
import type { Harness, RemotePeer } from './scenarios.js';

export interface OsHarnessOptions {
  /** The compiled agent (dist/conformance/sharing/agent.js). */
  readonly agent: string;
  /**
   * 'cuda' (the GPU), `machine=DIR` (the simulated machine serveMachine serves at DIR), or 'fake-cuda'
   * (the simulated stand-in for libcuda, one per process: bytes are not shared).
   */
  readonly backend: 'cuda' | 'fake-cuda' | `machine=${string}`;
}

export function osHarness(options: OsHarnessOptions): Harness {
  return {
    kind: 'os-processes',
    spawn: (flavour, label) => startAgent(options, flavour, label),
  };
}

function startAgent(options: OsHarnessOptions, flavour: FlavourName, label: string): Promise<RemotePeer> {
  const child: ChildProcess = fork(options.agent, [flavour, options.backend], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, (a: Answer) => void>();
  let next = 1;
  const ended = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let alive = true;
  child.once('exit', () => {
    alive = false;
    for (const reply of pending.values()) reply({ code: -1, props: { exited: true } });
    pending.clear();
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.on('message', (m: { ready?: number; id?: number; answer?: Answer }) => {
      if (m.ready !== undefined) {
        resolve(peer);
        return;
      }
      const reply = pending.get(m.id ?? 0);
      if (reply && m.answer) {
        pending.delete(m.id ?? 0);
        reply(m.answer);
      }
    });
    child.once('exit', (code, signal) =>
      reject(new Error(`${label} ended before it was ready (${code ?? signal})`)),
    );
    const peer: RemotePeer = {
      label,
      call(step, ...args) {
        if (!alive) return Promise.resolve({ code: -1, props: { exited: true } });
        const id = next++;
        return new Promise<Answer>((reply) => {
          pending.set(id, reply);
          child.send({ id, step, args });
        });
      },
      async kill() {
        if (alive) child.kill('SIGKILL');
        await ended;
      },
      async exit() {
        if (alive) await peer.call('exit');
        await ended;
      },
    };
  });
}
