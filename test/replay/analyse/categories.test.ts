/** The category rules (Note [Memory categories], src/replay/analyse/categories.ts), frame by frame. */
import { describe, expect, it } from 'vitest';
import { StackCategories, stackLines, stackSummary } from '../../../src/replay/analyse/categories.js';
import type { MemorySnapshot, SnapshotFrame } from '../../../src/replay/read/snapshot.js';

const TORCH = '/usr/lib/python3/dist-packages/torch';

/** A snapshot holding only these stacks (innermost frame first), numbered in order. */
function snapshotOf(stacks: readonly (readonly SnapshotFrame[])[]): MemorySnapshot {
  const frames: SnapshotFrame[] = [];
  const ids = stacks.map((s) => Int32Array.from(s, (f) => frames.push(f) - 1));
  return { frames, stacks: ids } as unknown as MemorySnapshot;
}

const py = (name: string, filename: string, line = 1): SnapshotFrame => ({ name, filename, line });
const cpp = (name: string): SnapshotFrame => ({ name, filename: '??', line: 0 });
const ALLOC = cpp(
  'c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char)',
);
const USER = py('train', '/home/me/train.py', 40);

describe('memory categories', () => {
  const cases: [string, readonly SnapshotFrame[], string][] = [
    [
      'AdamW state made by _init_group',
      [ALLOC, py('_init_group', `${TORCH}/optim/adam.py`, 178), USER],
      'optimizer-state',
    ],
    ['a step outside torch.optim', [ALLOC, py('custom_adamw', '/home/me/opt.py'), USER], 'optimizer-state'],
    [
      'the autograd engine (C++ frames only)',
      [
        ALLOC,
        cpp('torch::autograd::Node::operator()(std::vector<at::Tensor>&&)'),
        cpp('torch::autograd::python::PythonEngine::thread_init(int)'),
      ],
      'gradients',
    ],
    ['a custom Function backward', [ALLOC, py('backward', '/home/me/fn.py'), USER], 'gradients'],
    [
      'gradient clipping',
      [ALLOC, py('clip_grad_norm_', `${TORCH}/nn/utils/clip_grad.py`), USER],
      'gradients',
    ],
    [
      'Module.to',
      [
        ALLOC,
        py('convert', `${TORCH}/nn/modules/module.py`),
        py('_apply', `${TORCH}/nn/modules/module.py`),
        USER,
      ],
      'parameters',
    ],
    [
      'a layer made on the device',
      [ALLOC, py('__init__', `${TORCH}/nn/modules/linear.py`), USER],
      'parameters',
    ],
    [
      "Mosaic's 'param' rule (FSDP)",
      [ALLOC, py('_all_gather_flat_param', `${TORCH}/distributed/fsdp/_flat_param.py`)],
      'parameters',
    ],
    ['a forward', [ALLOC, py('forward', '/home/me/model.py'), USER], 'activations'],
    ['the loss', [ALLOC, py('cross_entropy', `${TORCH}/nn/functional.py`), USER], 'activations'],
    // Innermost first: activation recomputation inside a backward pass is an activation, as Mosaic reads it.
    [
      'a forward recomputed in backward',
      [ALLOC, py('forward', '/home/me/model.py'), py('backward', `${TORCH}/utils/checkpoint.py`)],
      'activations',
    ],
    // The 'param' substring is for Python functions only: C++ signatures carry it in template arguments.
    [
      'a C++ name holding param',
      [ALLOC, cpp('c10::impl::make_boxed_from_unboxed_functor<TypeParam>::call()')],
      'unknown',
    ],
    // A user's own __init__ says nothing; the frame outside it decides.
    [
      'a user __init__ inside a forward',
      [ALLOC, py('__init__', '/home/me/buffers.py'), py('forward', '/home/me/model.py')],
      'activations',
    ],
    ['no rule matches', [ALLOC, USER], 'unknown'],
  ];
  const snapshot = snapshotOf(cases.map((c) => c[1]));
  const categories = new StackCategories(snapshot);

  for (const [what, , want] of cases)
    it(`${what}: ${want}`, () => {
      const k = cases.findIndex((c) => c[0] === what);
      expect(categories.of(k, 0)).toBe(want);
    });

  it('a block in a private pool is the pools', () => {
    expect(categories.of(0, 1)).toBe('cuda-graph-pools');
    expect(categories.of(-1, 2)).toBe('cuda-graph-pools');
  });

  it('a block with no stack is unknown', () => {
    expect(categories.of(-1, 0)).toBe('unknown');
  });

  it("a stack's one-line name is its innermost frames of the program's own code, and its innermost C++ op", () => {
    const s = snapshotOf([
      [
        ALLOC,
        cpp('at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>, c10::Allocator*)'),
        cpp('at::meta::structured_addmm::meta(at::Tensor const&)'),
        py('forward', `${TORCH}/nn/modules/linear.py`, 134),
        py('forward', '/home/me/model.py', 12),
        py('step', '/home/me/train.py', 40),
      ],
    ]);
    expect(stackSummary(s, 0)).toBe(
      'forward me/model.py:12 < step me/train.py:40 [at::meta::structured_addmm::meta]',
    );
    expect(stackSummary(s, -1)).toBe('(no stack recorded)');
    expect(stackLines(s, 0).at(-1)).toBe('step (/home/me/train.py:40)');
  });
});

describe('categories from annotations', () => {
  const s = snapshotOf([[ALLOC, USER]]);
  const at = (stage: 'START' | 'END', name: string, timeUs: number, device = 0) => ({
    stage,
    name,
    timeUs,
    device,
  });
  const categories = new StackCategories(s, [
    at('START', '## forward ##', 100),
    at('START', 'Optimizer.step#AdamW.step', 150),
    at('END', 'Optimizer.step#AdamW.step', 160),
    at('END', '## forward ##', 200),
    at('START', 'model.backward', 300, 1),
    at('END', 'dataloader', 50),
    at('START', 'unrelated', 10),
  ]);

  it('the innermost window open at the allocation decides, on its own device', () => {
    expect(categories.ofBlock({ stack: -1, pool: 0, timeUs: 120 }, 0)).toBe('activations');
    expect(categories.ofBlock({ stack: -1, pool: 0, timeUs: 155 }, 0)).toBe('optimizer-state');
    expect(categories.ofBlock({ stack: -1, pool: 0, timeUs: 155 }, 1)).toBe('unknown');
    // A window never closed runs on to the end of the trace.
    expect(categories.ofBlock({ stack: -1, pool: 0, timeUs: 1e9 }, 1)).toBe('gradients');
    expect(categories.ofBlock({ stack: -1, pool: 0, timeUs: 250 }, 0)).toBe('unknown');
    expect(categories.ofBlock({ stack: -1, pool: 0, timeUs: Number.NaN }, 0)).toBe('unknown');
  });

  it('a stack that decides wins over the annotations, and a private pool over both', () => {
    const withStack = new StackCategories(
      snapshotOf([[ALLOC, py('_init_group', `${TORCH}/optim/adam.py`)]]),
      [at('START', '## forward ##', 100)],
    );
    expect(withStack.ofBlock({ stack: 0, pool: 0, timeUs: 120 }, 0)).toBe('optimizer-state');
    expect(withStack.ofBlock({ stack: 0, pool: 3, timeUs: 120 }, 0)).toBe('cuda-graph-pools');
    // A stack no rule matches leaves the block to the annotations.
    expect(categories.ofBlock({ stack: 0, pool: 0, timeUs: 120 }, 0)).toBe('activations');
  });
});
