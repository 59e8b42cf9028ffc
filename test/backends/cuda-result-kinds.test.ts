/**
 * The checked layer's CUresult -> kind table reads two codes per call (Note
 * [CUresult kinds per call], src/backends/cuda/checked.ts): 999 is a bad
 * descriptor only from the import, 400 a bad stream only from stream calls.
 */
import { describe, expect, it } from 'vitest';
import { CudaDriverError, cuResultKind } from '../../src/backends/cuda/checked.js';
import { ERROR_KINDS } from '../../src/core/errors.js';

describe('CUresult kinds per call', () => {
  it('999 is invalid-fd from cuMemImportFromShareableHandle only', () => {
    expect(cuResultKind('cuMemImportFromShareableHandle', 999)).toBe('invalid-fd');
    for (const fn of ['cuMemCreate', 'cuMemMap', 'cuMemExportToShareableHandle', 'cuStreamSynchronize'])
      expect(cuResultKind(fn, 999), fn).toBe('invalid-value');
  });

  it('400 is invalid-stream from the calls that take a stream only', () => {
    for (const fn of ['cuStreamSynchronize', 'cuStreamDestroy', 'cuMemcpyHtoDAsync', 'cuMemsetD8Async'])
      expect(cuResultKind(fn, 400), fn).toBe('invalid-stream');
    for (const fn of ['cuMemRelease', 'cuMemMap', 'cuCtxSetCurrent', 'cuMemImportFromShareableHandle'])
      expect(cuResultKind(fn, 400), fn).toBe('invalid-value');
  });

  it('codes with one meaning read the same from every call, and errors carry the code', () => {
    for (const fn of ['cuMemCreate', 'cuMemAlloc', 'cuStreamDestroy'])
      expect(cuResultKind(fn, 2), fn).toBe('out-of-memory');
    const e = new CudaDriverError('cuMemImportFromShareableHandle', 999);
    expect(e.kind).toBe('invalid-fd');
    expect(e.result).toBe(999);
    expect(e.message).toContain('CUDA_ERROR_UNKNOWN');
    expect(ERROR_KINDS).toContain(cuResultKind('cuMemMap', 12345));
  });
});
