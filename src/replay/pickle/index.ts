/** vmmkit's own pickle reader and writer, for PyTorch memory snapshots. */
export { describeOpcode, Op } from './opcodes.js';
export { readLong, unpickle } from './reader.js';
export { isPickleDict, type PickleDict, PickleError, PickleTuple, type PickleValue } from './value.js';
export { encodeLong, type PickleWriteOptions, pickle } from './writer.js';
