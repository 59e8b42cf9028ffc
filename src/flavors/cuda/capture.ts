/** CUDA's stream capture calls (Note [Stream capture] in src/core/graphs.ts): the driver's codes in front of core's captures. */
import type { Runtime } from '../../core/runtime.js';
import { type Box, isBox, writeBox } from '../common/args.js';
import type { VendorCodes } from '../common/error-table.js';
import * as C from './constants.js';
import type { CUstream } from './handle-types.js';
import type { CudaStreams } from './streams.js';

/** The capture calls of CUDA_FUNCTIONS, in the flavor's order. */
export const CUDA_CAPTURE_FUNCTIONS = [
  'cuStreamBeginCapture',
  'cuStreamBeginCapture_v2',
  'cuStreamEndCapture',
  'cuStreamGetCaptureInfo',
  'cuGraphInstantiate',
  'cuGraphInstantiateWithFlags',
  'cuGraphLaunch',
  'cuGraphDestroy',
  'cuGraphExecDestroy',
  'cuGraphGetNodes',
] as const;

export class CudaCapture {
  /** The calling thread's capture mode (cuThreadExchangeStreamCaptureMode). */
  #threadMode: number = C.CU_STREAM_CAPTURE_MODE_GLOBAL;

  constructor(
    readonly runtime: Runtime,
    readonly codes: VendorCodes,
    readonly streams: CudaStreams,
  ) {}

  /**
   * Swap the calling thread's capture mode: `mode.value` in, the previous
   * mode out. The driver takes any int and hands it back at the next
   * exchange (capture.exchangeModeBadValues); anything else is no C int.
   */
  exchangeMode(mode: Box<number>): number {
    if (!isBox(mode)) return C.CUDA_ERROR_INVALID_VALUE;
    let wanted: unknown;
    try {
      wanted = mode.value;
    } catch {
      return C.CUDA_ERROR_INVALID_VALUE;
    }
    if (typeof wanted !== 'number' || !Number.isInteger(wanted) || wanted < -(2 ** 31) || wanted >= 2 ** 31)
      return C.CUDA_ERROR_INVALID_VALUE;
    if (!writeBox(mode, this.#threadMode)) return C.CUDA_ERROR_INVALID_VALUE;
    this.#threadMode = wanted;
    return C.CUDA_SUCCESS;
  }

  begin(_hStream: CUstream, _mode: number): number {
    return C.CUDA_ERROR_NOT_SUPPORTED;
  }

  end(_hStream: CUstream, _phGraph: Box<bigint> | null): number {
    return C.CUDA_ERROR_NOT_SUPPORTED;
  }

  info(
    _hStream: CUstream,
    _status: Box<number> | null,
    _id: Box<bigint> | null,
    _graph: Box<bigint> | null,
    _numDependencies: Box<number> | null,
  ): number {
    return C.CUDA_ERROR_NOT_SUPPORTED;
  }

  instantiate(_phExec: Box<bigint> | null, _hGraph: bigint | number, _flags: bigint | number): number {
    return C.CUDA_ERROR_NOT_SUPPORTED;
  }

  launch(_hExec: bigint | number, _hStream: CUstream): number {
    return C.CUDA_ERROR_NOT_SUPPORTED;
  }

  destroyGraph(_hGraph: bigint | number): number {
    return C.CUDA_ERROR_NOT_SUPPORTED;
  }

  destroyExec(_hExec: bigint | number): number {
    return C.CUDA_ERROR_NOT_SUPPORTED;
  }

  nodes(_hGraph: bigint | number, _numNodes: Box<number> | null): number {
    return C.CUDA_ERROR_NOT_SUPPORTED;
  }
}
