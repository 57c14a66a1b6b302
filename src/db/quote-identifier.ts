/**
 * A name (a table's, a column's) as SQLite reads it in a statement, for the few statements whose
 * table or columns are only known at run time: in double quotes, a quote inside doubled.
 */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
