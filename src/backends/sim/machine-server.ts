/**
 * Note [A machine for several OS processes]: a simulated machine lives in
 * one Node process, but a program written for N OS processes (an exporter
 * and importers, each its own `node`) should run unchanged without a GPU.
 * So one process serves a Machine and the others reach it: `serveMachine`
 * makes a directory with a FIFO named `hello`; `connectMachine(dir)` (in any
 * process) gives a Backend whose every call crosses to the server and back.
 *
 * The front ends are synchronous (C calls return a code), so the client's
 * calls must be too, and Node has no synchronous socket: each client makes a
 * pair of FIFOs, writes its request as one JSON line with writeSync and
 * blocks in readSync for the answer line. The server reads every client
 * asynchronously (a net.Socket over each FIFO) and answers with writeSync, so
 * one server serves any number of clients, one call at a time, in the order
 * they arrive, as one machine does. A client that ends, even by SIGKILL,
 * closes its end of its request FIFO: the server sees the end and disposes
 * that simulated process, as the kernel tears down an exited process (its
 * handles, mappings, fds and tokens go; memory others still hold stays).
 *
 * What differs from one process: descriptors travel by the client's
 * `takeFd(fromPid, fd)` (the server's machine.passFd; pids are the machine's,
 * which the front ends report), and a read on a stream runs that stream's
 * queued work first (the bytes must come back in the answer; the simulator
 * models order, not time, so nothing else can tell).
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { isVmmError } from '../../core/errors.js';
import type { DeviceInfo } from '../../core/types.js';
import { Machine, type MachineOptions } from './machine.js';
import type { SimProcess } from './process.js';

export interface MachineServer {
  readonly directory: string;
  readonly machine: Machine;
  /** Stop serving: every client's process exits, the directory goes. */
  close(): void;
}

/** A request: a Backend method and its arguments (host buffers as base64). */
export interface MachineRequest {
  readonly op: string;
  readonly args: unknown[];
}

/** The answer: a value, or a VmmError's kind and message. */
export type MachineAnswer = { ok: unknown; bytes?: string } | { error: { kind: string; message: string } };

/** A DeviceInfo as it crosses in JSON: its driver attributes as [attribute, value] pairs. */
export type DeviceOnTheWire = Omit<DeviceInfo, 'driverAttributes'> & {
  readonly driverAttributes?: readonly (readonly [number, number])[];
};

export function deviceOnTheWire(d: DeviceInfo): DeviceOnTheWire {
  const { driverAttributes, ...rest } = d;
  return driverAttributes === undefined ? rest : { ...rest, driverAttributes: [...driverAttributes] };
}

export function deviceOffTheWire(d: DeviceOnTheWire): DeviceInfo {
  const { driverAttributes, ...rest } = d;
  return Object.freeze(
    driverAttributes === undefined ? rest : { ...rest, driverAttributes: new Map(driverAttributes) },
  );
}

export function makeFifo(path: string): void {
  execFileSync('mkfifo', ['-m', '600', path]);
}

/** Serve a simulated machine to the processes that connect to `directory` (connectMachine). */
export function serveMachine(directory: string, options: MachineOptions = {}): MachineServer {
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const machine = new Machine(options);
  const hello = join(directory, 'hello');
  makeFifo(hello);
  // Read and write: the server is a writer of its own hello FIFO too, so it never reads an end.
  const helloSocket = new Socket({
    fd: openSync(hello, constants.O_RDWR | constants.O_NONBLOCK),
    writable: false,
  });
  const clients = new Set<() => void>();
  lines(helloSocket, (id) => {
    if (/^[A-Za-z0-9-]+$/.test(id)) clients.add(serveClient(machine, directory, id, clients));
  });
  return {
    directory,
    machine,
    close() {
      for (const end of [...clients]) end();
      helloSocket.destroy();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/** Call `each` with every newline-terminated line arriving on `socket`. */
function lines(socket: Socket, each: (line: string) => void): void {
  let pending = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    pending += chunk;
    for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      each(line);
    }
  });
  socket.on('error', () => socket.destroy());
}

function serveClient(machine: Machine, directory: string, id: string, clients: Set<() => void>): () => void {
  const sim = machine.spawn();
  // The client opened both FIFOs before saying hello, so neither open blocks.
  const requests = new Socket({
    fd: openSync(join(directory, `${id}.req`), constants.O_RDONLY | constants.O_NONBLOCK),
    writable: false,
  });
  const answers = openSync(join(directory, `${id}.res`), constants.O_WRONLY);
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    clients.delete(end);
    sim.dispose();
    requests.destroy();
    try {
      closeSync(answers);
    } catch {
      // Already closed.
    }
  };
  lines(requests, (line) => {
    const answer = answerOf(machine, sim, JSON.parse(line) as MachineRequest);
    try {
      writeSync(answers, `${JSON.stringify(answer)}\n`);
    } catch {
      end();
    }
  });
  requests.on('end', end);
  requests.on('close', end);
  return end;
}

function answerOf(machine: Machine, p: SimProcess, request: MachineRequest): MachineAnswer {
  const { op } = request;
  // JSON writes an undefined argument (an optional one left out) as null; no Backend argument is null.
  const args = request.args.map((a) => (a === null ? undefined : a));
  try {
    switch (op) {
      case 'hello':
        // A Map is {} in JSON: a device's recorded attributes cross as [attribute, value] pairs.
        return { ok: { pid: p.pid, devices: p.devices.map(deviceOnTheWire), partialMaps: p.partialMaps } };
      case 'takeFd':
        return { ok: machine.passFd(args[0] as number, args[1] as number, p) };
      case 'write': {
        const [device, va, data, stream] = args as [number, number, string, number];
        p.write(device, va, new Uint8Array(Buffer.from(data, 'base64')), stream);
        return { ok: null };
      }
      case 'read': {
        const [device, va, n, stream] = args as [number, number, number, number];
        const dst = new Uint8Array(n);
        p.read(device, va, dst, stream);
        if (stream !== 0) p.synchronizeStream(stream);
        return { ok: null, bytes: Buffer.from(dst.buffer).toString('base64') };
      }
      case 'hostWrite': {
        const [va, data] = args as [number, string];
        p.hostWrite(va, new Uint8Array(Buffer.from(data, 'base64')));
        return { ok: null };
      }
      case 'hostRead': {
        const [va, n] = args as [number, number];
        const dst = new Uint8Array(n);
        p.hostRead(va, dst);
        return { ok: null, bytes: Buffer.from(dst.buffer).toString('base64') };
      }
      case 'dispose':
        p.dispose();
        return { ok: null };
      default: {
        const method = (p as unknown as Record<string, unknown>)[op];
        if (typeof method !== 'function')
          return { error: { kind: 'not-supported', message: `no call ${op}` } };
        const value = (method as (...a: unknown[]) => unknown).apply(p, args);
        return { ok: value === undefined ? null : value };
      }
    }
  } catch (e) {
    if (isVmmError(e)) return { error: { kind: e.kind, message: e.message } };
    return { error: { kind: 'invalid-value', message: e instanceof Error ? e.message : String(e) } };
  }
}
