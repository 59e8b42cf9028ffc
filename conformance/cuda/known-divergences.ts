/**
 * The conformance cases (cases.ts) where vmmkit's simulated CUDA flavour
 * answers differently from the real driver's transcript
 * (conformance/results/h200-driver.json), each with the reason.
 *
 * test/conformance/cuda-agreement.test.ts reads this list: every case not
 * named here must agree with the transcript exactly, and every case named
 * here must still differ. The list can only shrink: when a listed case starts
 * agreeing, the test fails and asks for its entry to be removed.
 */
export const KNOWN_DIVERGENCES: Readonly<Record<string, string>> = {
  'release.bogusHandles':
    'The driver crashed (SIGSEGV) releasing handle 0 and 0xdeadbeef; the simulator answers CUDA_ERROR_INVALID_VALUE, since a flavour call never ends the process.',
  'release.thenMapReleasedHandle':
    'The driver crashed (SIGSEGV) mapping a handle whose memory was released; the simulator answers CUDA_ERROR_INVALID_VALUE.',
  'map.bogusHandles':
    'The driver crashed (SIGSEGV) mapping handle 0 and 0xdeadbeef; the simulator answers CUDA_ERROR_INVALID_VALUE.',
  'properties.bogus':
    'The driver crashed (SIGSEGV) reading the properties of handle 0 and 0xdeadbeef; the simulator answers CUDA_ERROR_INVALID_VALUE.',
  'export.released':
    'The driver crashed (SIGSEGV) exporting a released handle; the simulator answers CUDA_ERROR_INVALID_VALUE.',
  'reserve.hintInsideFreedLarge':
    "A hint 16 MiB into a 128 MiB range freed a moment before was not honoured by the driver (a hint into a freed 4 MiB range, or at a freed range's base, was); the driver's VA allocator policy behind this is not known, so the simulator honours every free hint.",
  'properties.released':
    'The driver returned the old fields of a just-released handle (a use after free of its handle object); the simulator answers CUDA_ERROR_INVALID_VALUE for a dead handle.',
};
