/**
 * What a live block is for, told from the stack that allocated it and the
 * pool it lives in.
 *
 * Note [Memory categories]: a block's category comes from where it lives and
 * from its stack, never from its size or its lifetime alone. The rules, in
 * the order they are tried:
 *
 *  1. A block in a private pool (a CUDA graph's or a MemPool's; private-
 *     pools.ts tells the pool from the final segments) is `cuda-graph-pools`,
 *     whatever allocated it: a graph's pool holds its whole capture.
 *  2. A block without a stack goes to rule 4: the snapshot was recorded
 *     without stacks (`context=None`, as traces/h200 are), or the entry's
 *     frames were dropped. Nothing about its size or lifetime is taken for
 *     a category.
 *  3. Otherwise the frames are read from the innermost outwards, as Meta's
 *     Mosaic reads them (its AllocationType.from_frame_stack); the first
 *     frame that matches a rule decides:
 *     - `optimizer-state`: a frame in torch/optim/ (the state its
 *       `_init_group` makes, and what its `step` allocates), or a frame whose
 *       function names an optimizer step we know outside torch.optim
 *       (`custom_adamw`, `adam_step`, `zero_redundancy`);
 *     - `gradients`: the autograd engine running a backward pass (C++ frames
 *       `torch::autograd::Engine`, `PythonEngine`, `Node::operator()`,
 *       `AccumulateGrad`), a Python function named `backward` (a custom
 *       Function's or `Tensor.backward`'s), `_engine_run_backward`, or
 *       gradient clipping (`clip_grad_norm_`, `clip_grad_value_`). This is
 *       every block made while gradients are computed: the gradients kept in
 *       `.grad` and the backward pass's own temporaries, which the stacks do
 *       not tell apart;
 *     - `parameters`: a module's parameters made or moved (`_apply` and its
 *       `convert`, as `Module.to` and `.cuda()` run them; a module's
 *       `__init__` or `reset_parameters` in torch/nn/modules/; loading a
 *       state dict), or any function whose name holds `param` (Mosaic's rule:
 *       `_all_gather_flat_param`, `init_params`);
 *     - `activations`: a `forward` (a module's, or autograd recomputation's),
 *       a frame in torch/nn/functional.py (the loss) or in the autocast
 *       wrappers: the forward pass's outputs and what autograd saved of them
 *       for backward, which the stacks do not tell apart either.
 *  4. Where the stack says nothing (none recorded, or no rule matched), the
 *     annotations (`external_annotations`, record_function markers) open
 *     on the block's device when it was allocated decide, the innermost
 *     (latest opened) first: torch.optim's own `Optimizer.step#...` is
 *     `optimizer-state` (a block made in a step and live at the peak is the
 *     state the step keeps), a name holding `backward` is `gradients`, one
 *     holding `forward` is `activations`; other names decide nothing.
 *  5. Anything else is `unknown`.
 *
 * So `unknown` is honest: it is the share of the peak whose stacks and
 * annotations say nothing we can read. The annotations are given by the
 * caller (AnalyseOptions.annotations): the snapshot reader counts them but
 * does not keep them yet. The allocator's own slack (reserved less
 * allocated) is not a category of blocks; peak.ts splits it by cause.
 */
import { isPickleDict, type PickleValue } from '../read/pickle/index.js';
import {
  annotationOf,
  type MemorySnapshot,
  type SnapshotAnnotation,
  type SnapshotFrame,
} from '../read/snapshot.js';

export const MEMORY_CATEGORIES = [
  'parameters',
  'gradients',
  'optimizer-state',
  'activations',
  'cuda-graph-pools',
  'unknown',
] as const;
export type MemoryCategory = (typeof MEMORY_CATEGORIES)[number];

/** How each category reads in a sentence. */
export const CATEGORY_LABELS: Readonly<Record<MemoryCategory, string>> = {
  parameters: 'parameters',
  gradients: 'gradients and backward temporaries',
  'optimizer-state': 'optimizer state',
  activations: 'activations and autograd saved tensors',
  'cuda-graph-pools': 'CUDA-graph and MemPool private pools',
  unknown: 'unknown (the stacks do not say)',
};

type StackCategory = Exclude<MemoryCategory, 'cuda-graph-pools'>;

const ENGINE =
  /torch::autograd::(?:Engine::|python::PythonEngine|Node::operator\(\)|AccumulateGrad)|PythonEngine::thread_/;
const OPTIMIZER_NAMES = new Set(['custom_adamw', 'adam_step', '_single_tensor_adamw', '_multi_tensor_adamw']);
const BACKWARD_NAMES = new Set(['backward', '_engine_run_backward', 'clip_grad_norm_', 'clip_grad_value_']);
const PARAMETER_NAMES = new Set([
  '_apply',
  'convert',
  'reset_parameters',
  'load_state_dict',
  '_load_from_state_dict',
]);

/** The category one frame decides, or undefined when it says nothing (Note [Memory categories], rule 3). */
export function frameCategory(frame: SnapshotFrame): StackCategory | undefined {
  const { name, filename } = frame;
  const file = filename.replaceAll('\\', '/');
  if (file.includes('torch/optim/') || OPTIMIZER_NAMES.has(name) || name.includes('zero_redundancy'))
    return 'optimizer-state';
  if (ENGINE.test(name) || BACKWARD_NAMES.has(name)) return 'gradients';
  // C++ signatures hold 'param' in template arguments: the substring rule reads Python functions only.
  if (PARAMETER_NAMES.has(name) || (file.endsWith('.py') && name.includes('param'))) return 'parameters';
  if (name === '__init__' && file.includes('torch/nn/modules/')) return 'parameters';
  if (name === 'forward' || file.endsWith('torch/nn/functional.py') || name.startsWith('at::autocast::'))
    return 'activations';
  return undefined;
}

/** One `external_annotations` marker, as the reader keeps it (read/snapshot.ts). */
export type Annotation = SnapshotAnnotation;

/**
 * The annotations of an unpickled snapshot (`_dump_snapshot`'s dict), for
 * a caller that holds it whole: entries that are not a START or END with a
 * name, a device and a time are left out (they only ever help a category).
 * A snapshot the reader read has them already (`MemorySnapshot.annotations`).
 */
export function annotationsOf(value: PickleValue): Annotation[] {
  const list = isPickleDict(value) ? value.external_annotations : undefined;
  return Array.isArray(list) ? list.flatMap((e) => annotationOf(e) ?? []) : [];
}

/** A stretch between an annotation's START and its END. */
interface Window {
  readonly name: string;
  readonly start: number;
  readonly end: number;
}

/** The category an annotation's name decides (Note [Memory categories], rule 4), or undefined. */
export function annotationCategory(name: string): StackCategory | undefined {
  if (name.startsWith('Optimizer.step#')) return 'optimizer-state';
  const lower = name.toLowerCase();
  if (lower.includes('backward')) return 'gradients';
  if (lower.includes('forward')) return 'activations';
  return undefined;
}

/** Each device's annotation windows that decide a category, START to its END (one left open runs on). */
function windowsOf(annotations: readonly Annotation[]): Map<number, Window[]> {
  const out = new Map<number, Window[]>();
  const open = new Map<string, number[]>();
  const sorted = [...annotations].sort((a, b) => a.timeUs - b.timeUs);
  for (const a of sorted) {
    if (annotationCategory(a.name) === undefined || !Number.isFinite(a.timeUs)) continue;
    const key = `${a.device}\u0000${a.name}`;
    const starts = open.get(key) ?? [];
    if (a.stage === 'START') {
      starts.push(a.timeUs);
      open.set(key, starts);
      continue;
    }
    const start = starts.pop();
    if (start === undefined) continue; // an END whose START fell before the ring's window
    const list = out.get(a.device) ?? [];
    list.push({ name: a.name, start, end: a.timeUs });
    out.set(a.device, list);
  }
  for (const [key, starts] of open) {
    const [device, name] = key.split('\u0000');
    for (const start of starts) {
      const list = out.get(Number(device)) ?? [];
      list.push({ name, start, end: Number.POSITIVE_INFINITY });
      out.set(Number(device), list);
    }
  }
  return out;
}

/** A live block as categories read it: its stack, its pool, and when it was allocated (NaN: not known). */
export interface CategorisedBlock {
  readonly stack: number;
  readonly pool: number;
  readonly timeUs: number;
}

/**
 * Categories of a snapshot's blocks (Note [Memory categories]): each stack
 * worked out once (a long job's blocks share a few thousand stacks), the
 * annotation windows read where the stack says nothing.
 */
export class StackCategories {
  readonly #memo = new Map<number, StackCategory>();
  readonly #windows: Map<number, Window[]>;

  constructor(
    readonly snapshot: MemorySnapshot,
    annotations: readonly Annotation[] = [],
  ) {
    this.#windows = windowsOf(annotations);
  }

  /** Whether any annotation window decides a category. */
  get annotated(): boolean {
    return this.#windows.size > 0;
  }

  /** The category of a block with stack `stack` (-1: none) in pool `pool` (0: the default pool), by its stack. */
  of(stack: number, pool: number): MemoryCategory {
    if (pool > 0) return 'cuda-graph-pools';
    if (stack < 0) return 'unknown';
    let c = this.#memo.get(stack);
    if (c === undefined) {
      c = 'unknown';
      const { frames } = this.snapshot;
      for (const f of this.snapshot.stacks[stack] ?? []) {
        const found = frameCategory(frames[f]);
        if (found !== undefined) {
          c = found;
          break;
        }
      }
      this.#memo.set(stack, c);
    }
    return c;
  }

  /** The category of a live block on `device`: its pool, its stack, then the innermost annotation open at its allocation. */
  ofBlock(b: CategorisedBlock, device: number): MemoryCategory {
    const byStack = this.of(b.stack, b.pool);
    if (byStack !== 'unknown' || !Number.isFinite(b.timeUs)) return byStack;
    let inner: Window | undefined;
    for (const w of this.#windows.get(device) ?? [])
      if (w.start <= b.timeUs && b.timeUs <= w.end && (inner === undefined || w.start > inner.start))
        inner = w;
    return inner === undefined ? 'unknown' : (annotationCategory(inner.name) ?? 'unknown');
  }
}

/** A stack as lines a person reads, innermost first: `name (file:line)`. */
export function stackLines(snapshot: MemorySnapshot, stack: number, most = 64): string[] {
  if (stack < 0) return [];
  const ids = snapshot.stacks[stack] ?? [];
  const out: string[] = [];
  for (let i = 0; i < ids.length && out.length < most; i++) out.push(frameLine(snapshot.frames[ids[i]]));
  return out;
}

function frameLine(f: SnapshotFrame): string {
  return f.filename === '' || f.filename === '??' ? f.name : `${f.name} (${f.filename}:${String(f.line)})`;
}

/** Frames of the allocator and of the stack's own capture, as cppFunction names them, which every stack shares. */
const MACHINERY =
  /^(?:torch::unwind::|torch::CapturedTraceback|torch::cuda::gather|c10::|at::detail::|at::empty|at::native::empty|at::create_out|\?\?)|set_output/;

/**
 * The frames that say most about a stack in one line: the innermost Python
 * frames outside torch itself, else the innermost Python frames, else the
 * innermost C++ frames past the allocator's own.
 */
export function stackSummary(snapshot: MemorySnapshot, stack: number, most = 2): string {
  if (stack < 0) return '(no stack recorded)';
  const frames = Array.from(snapshot.stacks[stack] ?? [], (i) => snapshot.frames[i]);
  const python = frames.filter((f) => f.filename.endsWith('.py'));
  const own = python.filter((f) => !/\/torch\/|\/site-packages\//.test(f.filename.replaceAll('\\', '/')));
  const native = frames.filter((f) => !MACHINERY.test(cppFunction(f.name)));
  const pick = own.length > 0 ? own : python.length > 0 ? python : native.length > 0 ? native : frames;
  if (pick.length === 0) return '(empty stack)';
  const line = pick
    .slice(0, most)
    .map((f) =>
      f.filename.endsWith('.py') ? `${f.name} ${shortFile(f.filename)}:${String(f.line)}` : shortName(f.name),
    )
    .join(' < ');
  // Python frames alone do not tell an autocast copy from the op's own output: the innermost C++ op does.
  const op = python.length > 0 ? native.find((f) => !f.filename.endsWith('.py')) : undefined;
  return op === undefined || frames.indexOf(op) > frames.indexOf(python[0])
    ? line
    : `${line} [${shortName(op.name)}]`;
}

/** A C++ frame's function: no template arguments, argument list or return type, and not past 80 characters. */
function shortName(name: string): string {
  const bare = cppFunction(name);
  return bare.length > 80 ? `${bare.slice(0, 79)}…` : bare;
}

function cppFunction(name: string): string {
  let plain = name.replaceAll('(anonymous namespace)::', '');
  // Template arguments, innermost first, until none is left (or the brackets do not pair).
  for (let before = ''; before !== plain; ) {
    before = plain;
    plain = plain.replace(/<[^<>]*>/g, '');
  }
  const open = plain.replaceAll('operator()', 'operator__').indexOf('(');
  const head = open > 0 ? plain.slice(0, open) : plain;
  // A return type before the name: `at::TensorBase at::detail::_empty_generic`.
  return head.slice(head.lastIndexOf(' ') + 1);
}

function shortFile(filename: string): string {
  const parts = filename.replaceAll('\\', '/').split('/');
  return parts.slice(-2).join('/');
}
