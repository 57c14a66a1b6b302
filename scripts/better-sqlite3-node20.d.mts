/** Types of better-sqlite3-node20.mjs, for the tests. */
export declare const VERSION: string;
export declare const EDITS: readonly { file: string; count: number; from: string; to: string }[];
export declare function patchSources(
  read: (file: string) => string,
): { state: 'patched' } | { state: 'unknown'; file: string } | { state: 'changed'; texts: Map<string, string> };
