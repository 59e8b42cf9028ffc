/**
 * Peers as simulated processes of one machine (the simulator's model of
 * several OS processes on one GPU): descriptors travel by machine.passFd,
 * and a process that is killed simply exits (the simulator has no other
 * way to end).
 */
import { createMachine, type Machine } from '../../src/backends/sim/machine.js';
import { createAcl, createCuda, createHip } from '../../src/index.js';
import { type Answer, aclPeer, cudaPeer, type FlavourName, hipPeer, type PeerSteps } from './peer.js';
import type { Harness, RemotePeer } from './scenarios.js';

export function simHarness(machine: Machine = createMachine({ devices: ['H200'] })): Harness {
  const passFd = (to: { pid: number }) => (fromPid: number, fd: number) => machine.passFd(fromPid, fd, to);
  return {
    kind: 'simulator',
    async spawn(flavour: FlavourName, label: string): Promise<RemotePeer> {
      let steps: PeerSteps;
      if (flavour === 'cuda') {
        const f = createCuda({ machine });
        steps = cudaPeer(f, passFd(f));
      } else if (flavour === 'hip') {
        const f = createHip({ machine });
        steps = hipPeer(f, passFd(f));
      } else {
        const f = createAcl({ machine });
        steps = aclPeer(f);
      }
      let alive = true;
      const end = async () => {
        if (alive) steps.exit();
        alive = false;
      };
      return {
        label,
        async call(step, ...args): Promise<Answer> {
          if (!alive) throw new Error(`${label} has exited`);
          return (steps[step] as (...a: unknown[]) => Answer)(...args);
        },
        kill: end,
        exit: end,
      };
    },
  };
}
