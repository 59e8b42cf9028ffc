/**
 * The generated big snapshot (test/support/big-snapshot.ts) replays as
 * recorded: its seams release their segments in the order PyTorch's
 * empty_cache() does, so the benchmarks that read it answer a recording
 * replay reproduces (Note [Big snapshot]). Apart from snapshot-stream's
 * memory test, whose process it would share: it loads the replay engine.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { planReplay } from '../../src/replay/engine/trace-plan.js';
import { readSnapshotFile } from '../../src/replay/read/load.js';
import { writeBigSnapshot } from '../support/big-snapshot.js';
import { reproduceRecording } from '../support/replay.js';

const scratch = mkdtempSync(join(tmpdir(), 'vmmkit-big-replay-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('a generated snapshot of a native recording repeated (Note [Big snapshot])', () => {
  it('replays as recorded, its seams taken for empty_cache() calls', () => {
    const out = join(scratch, 'big.pickle');
    const source = new URL('../../traces/h200-whatif/gpt_train--stacks.pickle', import.meta.url).pathname;
    const info = writeBigSnapshot({ source, bytes: 8 * 1024 * 1024, out });
    expect(info.repetitions).toBeGreaterThan(2);
    const s = readSnapshotFile(out);
    const ar = reproduceRecording(s, { plan: planReplay(s) });
    expect(ar.devices.flatMap((d) => d.differences)).toEqual([]);
    expect(ar.reproduced).toBe(true);
    expect(ar.devices[0].segmentEvents.matched).toBe(ar.devices[0].segmentEvents.recorded);
    expect(ar.devices[0].segmentEvents.recorded).toBeGreaterThan(info.repetitions);
  });
});
