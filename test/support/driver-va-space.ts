/** The address space the DriverVaSpace tests lay out, as SimProcess does (Note [Driver VA placement]). */
import { DriverVaSpace, STARTUP_DRIVER_MEMORY, STARTUP_HOLE } from '../../src/backends/sim/driver-va.js';

export const MiB = 1024 * 1024;
/** One 2 MiB granule. */
export const G = 2 * MiB;
/** Where chunks start. */
export const LOW = 0x6000_0000_0000;
/** The start-up heap's free run. */
export const RUN = 0x7000_0000_0000;
export const END = 0x7fff_0000_0000;
/** The start-up heap's 2 MiB hole, below its driver memory and run. */
export const HOLE = RUN - STARTUP_DRIVER_MEMORY - STARTUP_HOLE;

/** A fresh space laid out so. */
export const space = (): DriverVaSpace => new DriverVaSpace(LOW, END, RUN);
