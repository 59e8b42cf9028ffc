/**
 * A process of a simulated machine that another OS process serves (Note [A
 * machine for several OS processes] in machine-server.ts): a Backend whose
 * calls go to the server as JSON lines over a FIFO and block for the answer.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { BACKEND_OPERATIONS, type Backend } from '../../backend/backend.js';
import { type ErrorKind, vmmError } from '../../core/errors.js';
import { type DeviceOnTheWire, deviceOffTheWire, type MachineAnswer, makeFifo } from './machine-server.js';

/** A Backend on a served machine, plus the served machine's way to pass a descriptor. */
export interface RemoteSimProcess extends Backend {
  /** Duplicate descriptor `fd` of machine process `fromPid` into this one (the server's machine.passFd). */
  takeFd(fromPid: number, fd: number): number;
}

class Connection {
  readonly #req: number;
  #res: number;
  readonly #paths: string[];
  #buffer = Buffer.alloc(1 << 16);
  #pending = '';
  #closed = false;

  constructor(directory: string) {
    const id = `${process.pid}-${randomBytes(6).toString('hex')}`;
    const req = join(directory, `${id}.req`);
    const res = join(directory, `${id}.res`);
    makeFifo(req);
    makeFifo(res);
    this.#paths = [req, res];
    // Both opened read-write, so neither open waits for the server (machine-server.ts opens them after hello).
    this.#req = openSync(req, 'r+');
    this.#res = openSync(res, 'r+');
    const hello = openSync(join(directory, 'hello'), 'w');
    try {
      writeSync(hello, `${id}\n`);
    } finally {
      closeSync(hello);
    }
  }

  /**
   * Once the server has answered, it holds the answer FIFO open for writing:
   * reopen it read-only, so that if the server goes away a read ends (EOF)
   * instead of waiting for ever on a write end this process holds itself.
   */
  readOnlyAnswers(): void {
    const ro = openSync(this.#paths[1], 'r');
    closeSync(this.#res);
    this.#res = ro;
  }

  call(op: string, args: unknown[]): { ok: unknown; bytes?: string } {
    if (this.#closed) throw vmmError('not-initialized', 'the connection to the machine is closed');
    writeSync(this.#req, `${JSON.stringify({ op, args })}\n`);
    const answer = JSON.parse(this.#line()) as MachineAnswer;
    if ('error' in answer) {
      const { kind, message } = answer.error;
      throw vmmError(
        kind as ErrorKind,
        message.startsWith(`${kind}: `) ? message.slice(kind.length + 2) : message,
      );
    }
    return answer;
  }

  #line(): string {
    for (;;) {
      const nl = this.#pending.indexOf('\n');
      if (nl >= 0) {
        const line = this.#pending.slice(0, nl);
        this.#pending = this.#pending.slice(nl + 1);
        return line;
      }
      const n = readSync(this.#res, this.#buffer, 0, this.#buffer.length, null);
      if (n === 0) throw vmmError('not-initialized', 'the machine server went away');
      this.#pending += this.#buffer.toString('utf8', 0, n);
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const fd of [this.#req, this.#res]) {
      try {
        closeSync(fd);
      } catch {
        // Already closed.
      }
    }
    for (const p of this.#paths) rmSync(p, { force: true });
  }
}

/**
 * Join the simulated machine served at `directory` (serveMachine) as a new
 * process: `createCuda({ backend: connectMachine(dir) })`, or any front end.
 */
export function connectMachine(directory: string): RemoteSimProcess {
  const c = new Connection(directory);
  const hello = c.call('hello', []).ok as { pid: number; devices: DeviceOnTheWire[]; partialMaps: boolean };
  c.readOnlyAnswers();
  const backend: Record<string, unknown> = {
    kind: 'sim',
    pid: hello.pid,
    devices: Object.freeze(hello.devices.map(deviceOffTheWire)),
    partialMaps: hello.partialMaps,
  };
  // Every operation crosses as is, but the two that carry host bytes.
  for (const op of BACKEND_OPERATIONS) backend[op] = (...args: unknown[]) => c.call(op, args).ok ?? undefined;
  backend.write = (device: number, va: number, src: Uint8Array, stream: number) => {
    c.call('write', [
      device,
      va,
      Buffer.from(src.buffer, src.byteOffset, src.length).toString('base64'),
      stream,
    ]);
  };
  backend.read = (device: number, va: number, dst: Uint8Array, stream: number) => {
    const { bytes } = c.call('read', [device, va, dst.length, stream]);
    dst.set(Buffer.from(bytes ?? '', 'base64'));
  };
  backend.hostWrite = (va: number, src: Uint8Array) => {
    c.call('hostWrite', [va, Buffer.from(src.buffer, src.byteOffset, src.length).toString('base64')]);
  };
  backend.hostRead = (va: number, dst: Uint8Array) => {
    const { bytes } = c.call('hostRead', [va, dst.length]);
    dst.set(Buffer.from(bytes ?? '', 'base64'));
  };
  backend.takeFd = (fromPid: number, fd: number) => c.call('takeFd', [fromPid, fd]).ok as number;
  backend.dispose = () => {
    try {
      c.call('dispose', []);
    } catch {
      // The server is gone: there is nothing left to give back.
    }
    c.close();
  };
  return backend as unknown as RemoteSimProcess;
}
