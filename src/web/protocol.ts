/**
 * What the page and its engine worker say to each other. The page sends
 * files and settings; the worker answers with progress, the page's data
 * (report-data.ts's shape, the same `vmmkit report` embeds) or one line
 * saying what is wrong.
 */
import type { SnapshotComparison } from '../replay/analyse/compare.js';
import type { RankAdvice, RankSummary } from '../replay/analyse/ranks.js';
import type { SnapshotVendor } from '../replay/read/vendor.js';
import type { AnswerAdvice } from '../report/answer.js';
import type { ReportData } from '../report/report-data.js';

/** The settings box, as typed (empty: not given). */
export interface PageSettings {
  /** A PYTORCH_CUDA_ALLOC_CONF string, pasted as people paste it. */
  readonly allocConf: string;
  /** A size (14GiB) or a fraction of the device (0.8). */
  readonly memoryLimit: string;
  /** A device name (H100, H200, ...) or its memory (80GiB), for a fraction. */
  readonly device: string;
}

/** A snapshot the `vmmkit open` server offers: its name, size and absolute URL on the loopback server. */
export interface ServedFile {
  readonly name: string;
  readonly size: number;
  readonly url: string;
  /** `vmmkit open --vendor`: the machine that made it, over the page's guess. */
  readonly vendor?: SnapshotVendor;
}

export type ToWorker =
  /** Files to read, answered under the settings the box holds (`id`: theirs, for a refusal). */
  | {
      readonly kind: 'load';
      readonly files: readonly (File | ServedFile)[];
      readonly id: number;
      readonly settings: PageSettings;
    }
  | { readonly kind: 'settings'; readonly id: number; readonly settings: PageSettings }
  /** The allocator state (segments and blocks) of one model at a point chosen on the timeline. */
  | {
      readonly kind: 'state';
      readonly id: number;
      readonly snapshot: number;
      readonly device: number;
      readonly allocator: string;
      readonly event: number;
    };

/** One snapshot's answer. */
export interface SnapshotPage {
  readonly name: string;
  readonly data: ReportData;
}

/** Everything the page draws: each snapshot's answer, and two compared or several ranks side by side. */
export interface Answers {
  readonly pages: readonly SnapshotPage[];
  /** Two snapshots: the first (before) against the second (after), at their peaks. */
  readonly compare: SnapshotComparison | null;
  /** Three or more: a job's ranks. */
  readonly ranks: RankSummary | null;
}

export type FromWorker =
  | {
      readonly kind: 'progress';
      readonly file: string;
      readonly phase: 'reading' | 'replaying' | 'advising';
      readonly fraction: number;
    }
  | ({ readonly kind: 'loaded'; readonly id: number; readonly ms: number } & Answers)
  | ({ readonly kind: 'answered'; readonly id: number; readonly ms: number } & Answers)
  /** A setting the engine refuses: which field, and the message (PyTorch's own for a configuration string). */
  | {
      readonly kind: 'refused';
      readonly id: number;
      readonly field: keyof PageSettings;
      readonly message: string;
    }
  /**
   * advise's setting for one snapshot of an answer already drawn (Note [The answer, then the advice]): `id` is
   * that answer's (its load's or settings' id), `page` the snapshot's index.
   */
  | { readonly kind: 'advised'; readonly id: number; readonly page: number; readonly advice: AnswerAdvice }
  /** advise's one setting for every rank of the ranks already drawn (the same `id`), searched after them. */
  | { readonly kind: 'ranks-advised'; readonly id: number; readonly advice: RankAdvice }
  | { readonly kind: 'failed'; readonly file: string | null; readonly message: string }
  | ({ readonly kind: 'state'; readonly id: number } & StateAt);

/** A model's address space right after an event: drawn by address-map.ts, with each block's stack on hover. */
export interface StateAt {
  readonly snapshot: number;
  readonly device: number;
  readonly allocator: string;
  /** The event the state follows (the first served at or after the one asked for). */
  readonly event: number;
  readonly reservedBytes: number;
  readonly allocatedBytes: number;
  readonly svg: string;
}
