/**
 * vmmkit: GPU virtual memory management for TypeScript. The root holds what
 * the README teaches; each part also has a subpath of its own.
 *
 * Front ends (C-shaped, the vendor's numeric codes): createCuda, createHip,
 * createAcl, with each vendor's enum constants under their C names
 * (`vmmkit/cuda`, `vmmkit/hip`, `vmmkit/acl`). Core (idiomatic, typed
 * errors, disposable objects, observers): Runtime, createRuntime
 * (`vmmkit/core`). The simulated machine: createMachine, serveMachine,
 * connectMachine (`vmmkit/sim`, with its devices and processes). The
 * allocators (`vmmkit/alloc`). The real NVIDIA backend: `{ backend: 'cuda' }`
 * in a front end's options (libcuda loads only then), or createCudaBackend.
 * Replaying PyTorch snapshots and what-if answers: `vmmkit/replay`; the
 * report and the address map: `vmmkit/report` (renderMap here too).
 *
 * Note [Declarations a user compiles]
 * A user's project type-checks the package's declarations as its own
 * tsconfig says, often a plain `target: es2022` with skipLibCheck false.
 * es2022's lib has no Disposable or Symbol.dispose, which the runtime's
 * objects, the front ends and the allocators name; so each source whose
 * declarations name them starts with `/// <reference lib="esnext.disposable"
 * preserve="true" />`, and its .d.ts brings the lib along (preserve: tsc
 * 5.5+ drops the directive from the output otherwise). What a user still
 * needs is @types/node (the pickle writer and the libcuda binding name
 * Buffer) and a module resolution that reads `exports` (node16, nodenext or
 * bundler) for the subpaths. test/package/declarations.test.ts compiles a
 * consumer that way against dist/ and checks every such declaration.
 */

export { CudaBackend, type CudaBackendOptions, createCudaBackend } from './backends/cuda/backend.js';
export { CudaDriverError } from './backends/cuda/checked.js';
export {
  CudaDriverUnavailableError,
  DEFAULT_LIBRARY_PATHS,
  findCudaDriver,
  loadCudaDriver,
} from './backends/cuda/driver.js';
export { takeFd } from './backends/cuda/os-fd.js';
export {
  createMachine,
  Machine,
  type MachineOptions,
} from './backends/sim/machine.js';
export { type MachineServer, serveMachine } from './backends/sim/machine-server.js';
export { DEVICE_PRESETS, type DevicePreset, type DeviceSpec } from './backends/sim/presets.js';
export { connectMachine, type RemoteSimProcess } from './backends/sim/remote-process.js';
export * from './entry/acl.js';
export * from './entry/alloc.js';
export * from './entry/core.js';
export * from './entry/cuda.js';
// Replay on a vendor's front end: a startProcess for replay() (vmmkit/replay).
export { FRONT_END_OF, type FrontEndStartOptions, startOnFrontEnd } from './entry/front-end-process.js';
export * from './entry/hip.js';
export type { Box } from './flavors/common/args.js';
export { formatBreak, formatState, inspect } from './flavors/inspect.js';
export { renderMap } from './report/address-map.js';
