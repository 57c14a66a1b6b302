/** pgpass (pg's reader of libpq's password file) ships no types: the one call vidfeeds makes. */
declare module 'pgpass' {
  export default function pgpass(connection: { host?: string; port?: number; database?: string; user?: string }, found: (password: string | undefined) => void): void;
}
