import type { ErrorTable } from '../common/error-table.js';
/**
 * CUresult for each core error kind: the code the H200 gave for that kind of
 * failure (conformance/results/h200-driver.json; case names in comments).
 * Kinds the CUDA calls never meet keep the closest documented code.
 */
export declare const CUDA_ERROR_TABLE: ErrorTable;
