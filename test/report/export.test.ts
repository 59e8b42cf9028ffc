import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { DEFAULT_ALLOCATORS } from '../../src/replay/engine/allocators.js';
import { exportRun } from '../../src/replay/engine/export.js';
import { ReplayError } from '../../src/replay/engine/replay.js';
import { planReplay } from '../../src/replay/engine/trace-plan.js';
import { readPickle, readSnapshotFile } from '../../src/replay/read/load.js';
import type { PickleDict } from '../../src/replay/read/pickle/value.js';
import { pickle } from '../../src/replay/read/pickle/writer.js';
import { Action, parseSnapshot } from '../../src/replay/read/snapshot.js';

import { python, pythonMissing } from '../replay/python.js';
import { recordReplay, replay } from '../support/replay.js';
import { inconsistencyForMemoryViz, unreadableByMemoryViz } from './memory-viz-shape.js';

const trace = (name: string) => fileURLToPath(new URL(`../../traces/h200/${name}`, import.meta.url));

describe.each(['phases_streams-native.pickle.gz', 'phases_streams-expandable.pickle.gz'])(
  'exportRun (the memory_viz export) of %s',
  (file) => {
    const snapshot = readSnapshotFile(trace(file));
    const recorded = recordReplay(snapshot, {
      allocators: DEFAULT_ALLOCATORS,
      keepEvents: true,
      peakLayout: false,
    });

    for (const [i, f] of DEFAULT_ALLOCATORS.entries()) {
      const run = recorded.result.allocators[i];
      const exported = exportRun(snapshot, recorded.plan, run) as PickleDict;
      const bytes = pickle(exported);
      const back = parseSnapshot(readPickle(bytes));

      it(`${f.name}: reads back with our reader, with our allocator's addresses and segment events`, () => {
        const t = back.traces[0];
        const dr = run.devices[0];
        const allocs: number[] = [];
        const segs: string[] = [];
        for (let k = 0; k < t.length; k++) {
          if (t.action[k] === Action.alloc) allocs.push(t.addr[k]);
          if (t.action[k] >= Action.segment_alloc && t.action[k] <= Action.segment_unmap)
            segs.push(`${t.action[k]}:${t.addr[k]}:${t.size[k]}`);
        }
        const expectedAllocs = [
          ...[...recorded.plan.devices[0].initialBlocks].map((id) => dr.blockAddress[id]),
          ...Array.from(recorded.plan.devices[0].blockOf)
            .filter((_, k) => recorded.plan.devices[0].trace.action[k] === Action.alloc)
            .map((id) => dr.blockAddress[id]),
        ];
        expect(allocs).toEqual(expectedAllocs);
        expect(segs).toEqual(dr.segmentEvents.map((e) => `${Action[e.action]}:${e.address}:${e.size}`));
      });

      it(`${f.name}: memory_viz's reader knows every opcode, and its backward walk finds every block and segment`, () => {
        expect(unreadableByMemoryViz(bytes)).toBeUndefined();
        expect(inconsistencyForMemoryViz(exported, 0)).toBeUndefined();
      });

      it(`${f.name}: replaying the export asks for the same peak, and the same allocator reserves the same peak`, () => {
        const plan = planReplay(back);
        expect(plan.peakRequestedBytes).toBe(recorded.plan.peakRequestedBytes);
        expect(plan.startedMidRun).toBe(false);
        const again = replay(back, { allocators: [f], plan, keepEvents: false });
        expect(again.allocators[0].peakReservedBytes).toBe(run.peakReservedBytes);
      });

      it(`${f.name}: the segments at the end tile with blocks, live bytes matching the run's live blocks`, () => {
        const dr = run.devices[0];
        let live = 0;
        for (let id = 0; id < dr.blockState.length; id++)
          if (dr.blockState[id] === 1) live += recorded.plan.devices[0].blockSize[id];
        let active = 0;
        for (const s of back.segments) {
          let at = s.address;
          for (const b of s.blocks) {
            expect(b.address).toBe(at);
            at += b.size;
            if (b.state === 'active_allocated') active += b.size;
          }
          expect(at).toBe(s.address + s.totalSize);
        }
        expect(active).toBe(live);
      });
    }

    it.skipIf(pythonMissing() !== undefined)(
      "Python's pickle loads the export (memory_viz's keys present)",
      () => {
        const bytes = pickle(exportRun(snapshot, recorded.plan, recorded.result.allocators[2]));
        const out = python(
          [
            'import pickle, sys, json',
            'd = pickle.load(sys.stdin.buffer)',
            't = d["device_traces"][0]',
            'print(json.dumps({"events": len(t), "segments": len(d["segments"]), "keys": sorted(t[0].keys()),',
            '  "segkeys": sorted(d["segments"][0].keys()), "actions": sorted(set(e["action"] for e in t))}))',
          ].join('\n'),
          bytes,
        ).toString();
        const r = JSON.parse(out) as {
          events: number;
          segments: number;
          keys: string[];
          segkeys: string[];
          actions: string[];
        };
        const back = parseSnapshot(readPickle(bytes));
        expect(r.events).toBe(back.traces[0].length);
        expect(r.segments).toBe(back.segments.length);
        expect(r.keys).toEqual(['action', 'addr', 'frames', 'size', 'stream', 'time_us']);
        expect(r.segkeys).toContain('blocks');
        expect(r.segkeys).toContain('total_size');
        expect(r.actions).toContain('alloc');
      },
    );

    it('the memory_viz checks catch a gzipped file, a protocol 5 pickle and a snapshot missing its segments', () => {
      const exported = exportRun(snapshot, recorded.plan, recorded.result.allocators[0]) as PickleDict;
      expect(unreadableByMemoryViz(gzipSync(pickle(exported)))).toMatch(/gzip/);
      expect(unreadableByMemoryViz(pickle(exported, { protocol: 5 }))).toMatch(/protocol 5/);
      expect(inconsistencyForMemoryViz({ ...exported, segments: [] }, 0)).toMatch(/^event \d+: /);
    });

    it('refuses a run replayed without keepEvents', () => {
      const plain = replay(snapshot, { allocators: [DEFAULT_ALLOCATORS[0]], keepEvents: false });
      expect(() => exportRun(snapshot, plain.plan, plain.allocators[0])).toThrow(ReplayError);
    });
  },
);
