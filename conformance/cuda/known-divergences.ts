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
/**
 * The driver honours a hint anywhere inside a freed reservation of up to 16 MiB, but inside one of 32 MiB
 * or more only at its base (recorded for 4 to 128 MiB). That looks like large reservations getting VA of
 * their own rather than a shared heap's; until the rule is known beyond these sizes, the simulator honours
 * every hint into free VA.
 */
const FREED_LARGE_RANGE_HINT =
  'A hint strictly inside a range freed a moment before as a reservation of 32 MiB or more is not honoured by the driver (inside 4 to 16 MiB ones, or at any base, it is); the simulator honours every hint into free VA.';

export const KNOWN_DIVERGENCES: Readonly<Record<string, string>> = {
  'release.bogusHandles':
    'The driver crashed (SIGSEGV) releasing handle 0 and 0xdeadbeef; the simulator answers CUDA_ERROR_INVALID_VALUE, since a flavour call never ends the process.',
  'release.thenMapReleasedHandle':
    'The driver crashed (SIGSEGV) mapping a handle whose memory was released; the simulator answers CUDA_ERROR_INVALID_VALUE.',
  'map.bogusHandles':
    'The driver crashed (SIGSEGV) mapping handle 0 and 0xdeadbeef; the simulator answers CUDA_ERROR_INVALID_VALUE.',
  'properties.bogus':
    'The driver crashed (SIGSEGV) reading the properties of handle 0 and 0xdeadbeef; the simulator answers CUDA_ERROR_INVALID_VALUE.',
  'reserve.hintInsideFreedLarge': FREED_LARGE_RANGE_HINT,
  'reserve.hintInto32MiBFreedPlus2MiB': FREED_LARGE_RANGE_HINT,
  'reserve.hintInto32MiBFreedPlusQuarter': FREED_LARGE_RANGE_HINT,
  'reserve.hintInto64MiBFreedPlus2MiB': FREED_LARGE_RANGE_HINT,
  'reserve.hintInto64MiBFreedPlusQuarter': FREED_LARGE_RANGE_HINT,
  'capture.exchangeModeNullBox':
    'The driver crashed (SIGSEGV) exchanging the capture mode through a NULL pointer; the simulator answers CUDA_ERROR_INVALID_VALUE.',
  'attribute.badNumbers':
    "The H200's driver 580 answers attribute 144, one past the last CUdevice_attribute of the cuda.h vmmkit follows (CUDA 13.0, 143), whose value device-attributes.py did not record; the simulated H200 knows no value for it and answers CUDA_ERROR_INVALID_VALUE. Over the real driver the CUDA backend reads attributes up to 255, so the front end answers it there.",
  'properties.released':
    'The driver returned the old fields of a just-released handle (a use after free of its handle object); the simulator answers CUDA_ERROR_INVALID_VALUE for a dead handle.',
};

const WHOLE_HANDLE_MAPS =
  "The driver maps a whole handle from its start even where the range runs past the reservation's end (into the next reservation, or into address space no reservation holds). Core keeps every mapping inside one reservation, so the CUDA flavour hands such a map down as pieces; the simulator maps pieces and agrees with the driver, while the real backend, whose cuMemMap takes whole handles only, refuses the first piece with CUDA_ERROR_NOT_SUPPORTED (Note [Whole-handle maps]).";

/**
 * Where vmmkit running over the real driver (createCuda({ backend: 'cuda' }),
 * conformance/gpu/prove.ts) answers differently from the raw driver, beyond
 * the cases above, each with the reason.
 */
export const KNOWN_BACKEND_DIVERGENCES: Readonly<Record<string, string>> = {
  'map.spanningTwoReservations': WHOLE_HANDLE_MAPS,
  'map.pastReservationEnd': WHOLE_HANDLE_MAPS,
  'map.pastReservationEndIntoFreedRange': WHOLE_HANDLE_MAPS,
  'map.pastReservationEndIntoNextReservation': WHOLE_HANDLE_MAPS,
};
