/**
 * Every command of the command line, described once: what it answers, what
 * it takes, each option with its line of help, an example that runs as
 * written from the repository's root, and its exit codes. The parser, the
 * usage lines and --help all read these (arguments.ts); cli.ts dispatches
 * through a table keyed by the same names.
 */
import type { CommandSpec } from './arguments.js';

const SNAPSHOT = { usage: '<snapshot.pickle[.gz]>', what: 'snapshot file' } as const;
const SCRIPT = { usage: '<script.mjs>', what: 'script' } as const;
const TRACE = 'traces/h200/phases_streams-native.pickle.gz';

/** Exit codes of a command that reads input and answers. */
const EXIT_CODES = 'exit codes: 0 done; 1 bad input (one line); 2 a usage mistake (one line and the usage)';

/** The what-if options replay, advise and report share: the limit, and the device it may be a fraction of. */
const LIMIT_OPTIONS = {
  'memory-limit': {
    type: 'string',
    value: 'SIZE',
    help: 'cap each device as set_per_process_memory_fraction would: 14000MiB, 13.7GiB, 14.7GB, or a fraction of the device (0.9, 90%; needs --device or --device-memory)',
  },
  device: {
    type: 'string',
    value: 'NAME',
    help: 'the device the run had: H100, H200, A100-80GB, A100-40GB, L40S, MI300X, MI250X, Ascend-910B (any case; spaces, hyphens, underscores as you like), or its memory (80GiB)',
  },
  'device-memory': {
    type: 'string',
    value: 'SIZE',
    help: "the device's memory, for a device not in the list (80GiB); overrides --device's",
  },
  vendor: {
    type: 'string',
    value: 'cuda|rocm|npu',
    help: "the machine that made the snapshot, over the guess from its frames, settings and streams (npu: torch_npu's allocator and PYTORCH_NPU_ALLOC_CONF)",
  },
} as const;

const ALLOC_CONF = {
  type: 'string',
  value: 'CONF',
  help: 'replay as if PYTORCH_CUDA_ALLOC_CONF held CONF (pasted as you set it: PYTORCH_CUDA_ALLOC_CONF=..., quotes and export are fine); adds the pytorch allocator',
} as const;

const JSON_OPTION = { type: 'boolean', help: 'exactly one JSON object on stdout' } as const;

export const DEMO_SPEC = {
  name: 'demo',
  summary:
    "The seeds' VMM sequences on simulated devices (CUDA on an H200, HIP on an MI300X, ACL on an Ascend 910B), each with its call tree.",
  options: {
    flavor: { type: 'string', value: 'cuda|hip|acl', help: 'run one flavor (default: all three)' },
    layers: {
      type: 'string',
      value: 'vendor|generic',
      help: "name the tree's layers as the vendor does (default) or as vmmkit's own (flavor, core, backend, device)",
    },
    json: { type: 'boolean', help: "one JSON document: each demo's lines and its call tree" },
  },
  examples: ['vmmkit demo --flavor hip'],
  exitCodes: 'exit codes: 0 every check held; 1 a check failed; 2 a usage mistake (one line and the usage)',
} as const satisfies CommandSpec;

export const TRACE_SPEC = {
  name: 'trace',
  summary:
    'Run a script (its default export gets createCuda, createHip, createAcl, ...) with tracing on, and print its call tree.',
  operand: SCRIPT,
  options: {
    layers: {
      type: 'string',
      value: 'vendor|generic',
      help: "the tree's layers as the vendor names them (default) or vmmkit's own",
    },
    break: {
      type: 'string',
      value: 'NAME',
      multiple: true,
      help: 'stop at each call NAME (cuMemMap, mark, ...) and print the process there; repeat for several',
    },
    vendor: {
      type: 'string',
      value: 'cuda|rocm|npu',
      help: 'with a snapshot: whose front end it replays on (npu: ACL over Ascend 910Bs; rocm: HIP over MI300Xs; cuda: CUDA over H200s), over the guess from the snapshot',
    },
    json: { type: 'boolean', help: 'the tree as JSON' },
  },
  examples: [
    'vmmkit trace examples/grow.mjs --break cuMemMap',
    // Note [A snapshot as a program]: a snapshot replays on its vendor's front end.
    'vmmkit trace test/replay/fixtures/wild/memsnapdump-multi-devices.pickle.gz --break aclrtMapMem',
  ],
  exitCodes: 'exit codes: 0 the script ran; 1 it could not load or it threw (one line); 2 a usage mistake',
} as const satisfies CommandSpec;

export const INSPECT_SPEC = {
  name: 'inspect',
  summary: "Every process a script made, in its vendor's objects: reservations, mappings, handles, access.",
  operand: SCRIPT,
  options: {
    at: {
      type: 'string',
      value: 'NAME',
      help: "every process live at the script's mark(NAME) (default: each at its end)",
    },
    vendor: {
      type: 'string',
      value: 'cuda|rocm|npu',
      help: 'with a snapshot: whose front end it replays on (npu: ACL over Ascend 910Bs; rocm: HIP over MI300Xs; cuda: CUDA over H200s), over the guess from the snapshot',
    },
    json: JSON_OPTION,
  },
  examples: [
    'vmmkit inspect examples/grow.mjs --at grown',
    'vmmkit inspect test/replay/fixtures/wild/memsnapdump-multi-devices.pickle.gz --at end',
  ],
  exitCodes: 'exit codes: 0 the script ran; 1 it could not load or it threw (one line); 2 a usage mistake',
} as const satisfies CommandSpec;

export const MAP_SPEC = {
  name: 'map',
  summary:
    "A script's address spaces as a picture: reservations, mappings, handles and each device's access.",
  operand: SCRIPT,
  options: {
    out: {
      type: 'string',
      value: 'map.html|map.svg',
      help: 'the file to write: .html a page with its tables (default map.html), .svg the maps alone',
    },
    at: { type: 'string', value: 'NAME', help: "draw every process live at the script's mark(NAME)" },
  },
  examples: ['vmmkit map examples/grow.mjs --at grown --out grow.html'],
  exitCodes: EXIT_CODES,
} as const satisfies CommandSpec;

export const REPLAY_SPEC = {
  name: 'replay',
  summary:
    'A PyTorch memory snapshot replayed through exact models of its allocator (and ours): peak reserved, OOMs, driver calls.',
  operand: SNAPSHOT,
  options: {
    allocator: {
      type: 'string',
      value: 'NAME',
      multiple: true,
      help: 'replay with this allocator (pytorch, pytorch-native, pytorch-expandable, vmmkit, ...); repeat for several (default: all)',
    },
    'alloc-conf': ALLOC_CONF,
    ...LIMIT_OPTIONS,
    backend: { type: 'string', value: 'sim|cuda', help: 'the simulated machine (default) or the real GPUs' },
    json: JSON_OPTION,
    costs: {
      type: 'string',
      value: 'FILE',
      help: "price driver calls with this cost table (default: the package's)",
    },
    fidelity: { type: 'boolean', help: "compare each run's segment events and offsets with the recording's" },
    'stop-at-oom': { type: 'boolean', help: "end each allocator's run at its first OOM" },
    'no-empty-cache': {
      type: 'boolean',
      help: 'do not replay the empty_cache() calls inferred from the recording',
    },
    'sim-addresses': { type: 'boolean', help: "the simulator's own addresses, not the recorded ones" },
    export: {
      type: 'string',
      value: 'DIR',
      help: 'write each run as a snapshot of its own into DIR, for memory_viz',
    },
  },
  examples: [`vmmkit replay ${TRACE} --alloc-conf expandable_segments:True --device H100 --memory-limit 0.9`],
  exitCodes:
    'exit codes: 0 replayed (OOMs are answers, not failures); 1 bad input or a run that failed (one line); 2 a usage mistake (one line and the usage)',
} as const satisfies CommandSpec;

export const ADVISE_SPEC = {
  name: 'advise',
  summary:
    'Which PYTORCH_CUDA_ALLOC_CONF this recorded workload should run with: settings searched by exact replay, ranked, the simplest of the best recommended.',
  operand: { ...SNAPSHOT, count: 'one-or-more' },
  options: {
    'memory-limit': LIMIT_OPTIONS['memory-limit'],
    tolerance: {
      type: 'string',
      value: 'PCT,SIZE',
      help: 'peaks within this of the best are equal, and the simplest of them wins (default 1%,64MiB)',
    },
    workers: {
      type: 'string',
      value: 'N',
      help: 'worker threads beside this one (default: one per other core, from 500,000 events; 0: none)',
    },
    json: JSON_OPTION,
    device: LIMIT_OPTIONS.device,
    'device-memory': LIMIT_OPTIONS['device-memory'],
    vendor: LIMIT_OPTIONS.vendor,
  },
  examples: [`vmmkit advise ${TRACE} --device H100 --memory-limit 0.9`],
  exitCodes:
    'exit codes: 0 advice given; 1 bad input (one line); 2 a usage mistake (one line and the usage); 3 no setting fits under --memory-limit (the verdict, no line to paste)',
} as const satisfies CommandSpec;

export const COMPARE_SPEC = {
  name: 'compare',
  summary:
    'Two snapshots of one job, before and after a change, at their peaks: reserved and allocated, what holds memory by category and by stack, and both replayed under a setting.',
  operand: { usage: '<before.pickle[.gz]> <after.pickle[.gz]>', what: 'snapshot file', count: 'one-or-more' },
  options: {
    'alloc-conf': {
      type: 'string',
      value: 'CONF',
      help: 'also replay both as if PYTORCH_CUDA_ALLOC_CONF held CONF (pasted as you set it)',
    },
    ...LIMIT_OPTIONS,
    json: JSON_OPTION,
  },
  examples: [
    'vmmkit compare traces/h200-whatif/gpt_train--reference.pickle.gz traces/h200-whatif/gpt_train--expandable.pickle.gz --alloc-conf expandable_segments:True',
  ],
  exitCodes:
    'exit codes: 0 compared; 1 bad input (one line); 2 a usage mistake, or not two files (one line and the usage)',
} as const satisfies CommandSpec;

export const OPEN_SPEC = {
  name: 'open',
  summary:
    'The page in a browser: served on 127.0.0.1 with the snapshots named (or none: drop them on it), each read, replayed and advised on in the page; nothing leaves this machine.',
  operand: { usage: '[<snapshot.pickle[.gz]>]', what: 'snapshot file', count: 'one-or-more' },
  options: {
    port: { type: 'string', value: 'N', help: 'the port on 127.0.0.1 (default 0: any free one)' },
    'no-browser': { type: 'boolean', help: 'print the URL and open no browser' },
    vendor: LIMIT_OPTIONS.vendor,
  },
  examples: [`vmmkit open ${TRACE}`],
  exitCodes:
    'exit codes: 0 served until stopped (Ctrl-C); 1 bad input, a port in use or the page not built (one line); 2 a usage mistake (one line and the usage)',
} as const satisfies CommandSpec;

export const REPORT_SPEC = {
  name: 'report',
  summary:
    "The replay's answers as one self-contained HTML page: memory over time, reserved memory a request could not use, driver calls, the address space at the peak.",
  operand: SNAPSHOT,
  options: {
    allocator: {
      type: 'string',
      value: 'NAME',
      multiple: true,
      help: 'draw this allocator (repeat for several; default: all)',
    },
    'alloc-conf': ALLOC_CONF,
    ...LIMIT_OPTIONS,
    out: { type: 'string', value: 'report.html', help: 'the page to write (default report.html)' },
    costs: { type: 'string', value: 'FILE', help: 'price driver calls with this cost table' },
    title: { type: 'string', value: 'TEXT', help: "the page's title" },
    'export-snapshot': {
      type: 'string',
      value: 'PATH',
      help: "also write each allocator's run as a snapshot memory_viz opens (several: PATH with -NAME)",
    },
    advise: {
      type: 'boolean',
      help: "also run advise's search and name its setting in the answer (several replays more)",
    },
  },
  examples: [`vmmkit report ${TRACE} --out report.html`],
  exitCodes: EXIT_CODES,
} as const satisfies CommandSpec;
