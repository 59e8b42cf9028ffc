/** vmmkit's own pickle reader and writer, for PyTorch memory snapshots. */
export { DictSink, ListSink, Memo, STREAMED, type StackValue, Streamed } from './memo.js';
export { describeOpcode, Op } from './opcodes.js';
export {
  CUT,
  type FastDict,
  PickleReader,
  type PickleShape,
  type Place,
  readLong,
  StringCache,
  unpickle,
} from './reader.js';
export { isPickleDict, type PickleDict, PickleError, PickleTuple, type PickleValue } from './value.js';
export { encodeLong, PickleStreamWriter, type PickleWriteOptions, pickle } from './writer.js';
