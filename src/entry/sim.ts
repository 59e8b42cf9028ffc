/**
 * `vmmkit/sim`: the simulated GPU machine: devices with physical memory and
 * page tables, processes with address spaces and fd tables, the device
 * presets, and a machine served to several OS processes.
 */
export {
  createMachine,
  Machine,
  type MachineOptions,
  type ProcessRef,
  SimDevice,
} from '../backends/sim/machine.js';
export { type MachineServer, serveMachine } from '../backends/sim/machine-server.js';
export { PAGE_SIZE } from '../backends/sim/physical-memory.js';
export { DEVICE_PRESETS, type DevicePreset, type DeviceSpec } from '../backends/sim/presets.js';
export { SimProcess } from '../backends/sim/process.js';
export { connectMachine, type RemoteSimProcess } from '../backends/sim/remote-process.js';
