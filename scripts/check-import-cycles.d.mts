/** The dirs walked by default: src, platforms, fixtures. */
export const DEFAULT_DIRS: string[];
/** Module file → the module files it imports (relative imports only). */
export function importGraph(root: string, dirs?: string[]): Map<string, string[]>;
/** One cycle per strongly connected component, as paths relative to `root`, first file repeated last. */
export function findImportCycles(root: string, dirs?: string[]): string[][];
