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
  'capture.exchangeModeNullBox':
    'The driver crashed (SIGSEGV) exchanging the capture mode through a NULL pointer; the simulator answers CUDA_ERROR_INVALID_VALUE.',
  'startupHeap.loneAfterCreatedContext':
    "A lone 2 MiB reservation in a created context landed 640 MiB below the primary context's hole (granulesFromBefore -320) both times this case was recorded: at 23:13 UTC in a worker that had run other cases, and at 23:44 UTC in a fresh worker (after a restart). The same first calls in startupHeap.createdContextTwoLone, twoCreatedContexts, cuMemAllocInCreatedContext and reservationOutlivesCreatedContext, recorded in one fresh worker at 23:29 UTC, land 608 MiB below (-304), which the simulator follows (Note [Created contexts' heaps]); the tail is not free in both (mapPastLone 1). What moves the created context's heap by 32 MiB between processes is not recorded.",
  'primaryDestroy.resetOldStreamQuery':
    'The driver crashed (SIGSEGV) querying a stream made before cuDevicePrimaryCtxReset, after a retain (it follows the freed stream); the simulator answers CUDA_ERROR_INVALID_HANDLE, the stream having gone with its context.',
  'primaryDestroy.resetOldStreamDestroy':
    'The driver crashed (SIGSEGV) destroying a stream made before cuDevicePrimaryCtxReset, after a retain; the simulator answers CUDA_ERROR_INVALID_HANDLE.',
  'primaryDestroy.resetWithObjects':
    'The driver crashed (SIGSEGV) in this case, after cuDevicePrimaryCtxReset of a primary context holding cuMemAlloc memory, a stream, an event and a VMM mapping (2026-12-01 23:29 UTC); its pieces (23:44 UTC) show which: the query of the stream made before the reset (primaryDestroy.resetOldStream*), and the simulator, answering a code for each call, agrees with the rest (primaryDestroy.resetReleases, resetOldEvent*; Note [Destroying a primary context]).',
  'properties.released':
    'The driver returned the old fields of a just-released handle (a use after free of its handle object); the simulator answers CUDA_ERROR_INVALID_VALUE for a dead handle.',
};

const WHOLE_HANDLE_MAPS =
  "The driver maps a whole handle from its start even where the range runs past the reservation's end (into the next reservation, or into address space no reservation holds). Core keeps every mapping inside one reservation, so the CUDA flavour hands such a map down as pieces; the simulator maps pieces and agrees with the driver, while the real backend, whose cuMemMap takes whole handles only, refuses the first piece with CUDA_ERROR_NOT_SUPPORTED (Note [Whole-handle maps]).";

const PROVE_WORKER_HEAP =
  "In prove.js's worker, which runs case after case in one process over the real driver, the start-up heap's 2 MiB hole is not free when these cases run (on the H200, 2026-12-01 23:59 UTC, lone reservations land side by side, 1 granule apart, where the recorder's worker had them 37 apart from the hole): the distances differ, and a map past a reservation's end is refused by the whole-handle backend (801) before the driver can answer (Note [Whole-handle maps]).";

const CREATED_CONTEXT_HEAP =
  "Over the real driver a created context is the CUDA flavor's model on the device's primary context (Note [Created contexts]): no driver context is made, so no start-up heap of its own, and a reservation lands where it would have without the context (0 granules from the one before, not 304 below it).";

const FAULT_NOT_SENT =
  "vmmkit checks a graph launch's captured ranges and, where memory is gone, faults the device in its own books (Note [Faulted devices]) and answers 719 for it from then on, as the driver does after the fault; it never sends the work into memory that is gone, so the real context stays usable and the raw cuCtxSynchronize after the case answers 0 (or, after a modelled reset or release, 0 where the driver answers 709), not what the faulted driver answers.";

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
  'map.pastReservationEndSmallerThanReservation': WHOLE_HANDLE_MAPS,
  'map.overReservationLoneAtStart': WHOLE_HANDLE_MAPS,
  'map.overReservationAtStartIntoFreedRange': WHOLE_HANDLE_MAPS,
  'map.overReservationInsideIntoFreedRange': WHOLE_HANDLE_MAPS,
  'map.overReservationLoneInside': WHOLE_HANDLE_MAPS,
  'map.overReservationAtStartIntoNextReservation': WHOLE_HANDLE_MAPS,
  'map.overReservationFourTimes': WHOLE_HANDLE_MAPS,
  'startupHeap.threeLoneReservations': PROVE_WORKER_HEAP,
  'startupHeap.fourMiBThenTwo': PROVE_WORKER_HEAP,
  'startupHeap.alignedTo4MiBThenLone': PROVE_WORKER_HEAP,
  'startupHeap.hintsAroundTheHole': PROVE_WORKER_HEAP,
  'startupHeap.fillTheRunThenMapPastItsEnd': PROVE_WORKER_HEAP,
  'startupHeap.loneAfterCuMemAlloc': PROVE_WORKER_HEAP,
  'startupHeap.loneAfterCuMemAllocFreed': PROVE_WORKER_HEAP,
  'startupHeap.loneAfterSmallCuMemAlloc': PROVE_WORKER_HEAP,
  'startupHeap.loneAfterStream': PROVE_WORKER_HEAP,
  'startupHeap.loneAfterEvent': PROVE_WORKER_HEAP,
  'startupHeap.createdContextTwoLone': CREATED_CONTEXT_HEAP,
  'startupHeap.twoCreatedContexts': CREATED_CONTEXT_HEAP,
  'startupHeap.cuMemAllocInCreatedContext': CREATED_CONTEXT_HEAP,
  'startupHeap.reservationOutlivesCreatedContext': CREATED_CONTEXT_HEAP,
  'capture.replay.afterUnmap': FAULT_NOT_SENT,
  'capture.replay.afterMemFree': FAULT_NOT_SENT,
  'stickyFault.callsAfter': FAULT_NOT_SENT,
  'stickyFault.moreCallsAfter': FAULT_NOT_SENT,
  'stickyFault.inCreatedContext': FAULT_NOT_SENT,
  'stickyFault.thenCreateContext': FAULT_NOT_SENT,
  'stickyFault.primaryReset': FAULT_NOT_SENT,
  'stickyFault.releaseToZero': FAULT_NOT_SENT,
  'primaryDestroy.resetReleases':
    "cuDevicePrimaryCtxReset is the CUDA flavor's model over the real driver (Note [Destroying a primary context]): the CUDA backend keeps the device's real primary context for the process, so the raw cuCtxSynchronize after the case answers 0, not 709.",
};
