/** What people paste for --alloc-conf (Note [Pasted configurations] in src/alloc/pytorch/alloc-conf.ts). */
import { describe, expect, it } from 'vitest';
import { AllocConfError, allocConfFromPaste, parseAllocConf } from '../../../src/alloc/pytorch/alloc-conf.js';

describe('allocConfFromPaste', () => {
  it('strips the name, export and quotes, as the shell would, and nothing else', () => {
    const cases: [string, string][] = [
      ['expandable_segments:True', 'expandable_segments:True'],
      ['PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128', 'max_split_size_mb:128'],
      ['export PYTORCH_ALLOC_CONF="expandable_segments:True"', 'expandable_segments:True'],
      ["PYTORCH_NPU_ALLOC_CONF = 'expandable_segments:True'", 'expandable_segments:True'],
      ['"PYTORCH_HIP_ALLOC_CONF=expandable_segments:True"', 'expandable_segments:True'],
      ['', ''],
      // Unbalanced quotes are the string's own: PyTorch then refuses it, in its words.
      ['"expandable_segments:True', '"expandable_segments:True'],
      // Another variable's name is not stripped.
      ['CUDA_VISIBLE_DEVICES=0', 'CUDA_VISIBLE_DEVICES=0'],
    ];
    for (const [pasted, conf] of cases) expect(allocConfFromPaste(pasted), pasted).toBe(conf);
  });

  it("parseAllocConf itself stays PyTorch's: the pasted form is refused there, with no hint to give", () => {
    expect(() => parseAllocConf('PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True')).toThrow(AllocConfError);
    expect(() => parseAllocConf('garbage_collection_threshold=0.6')).toThrow(
      '(did you mean garbage_collection_threshold:0.6?)',
    );
  });
});
