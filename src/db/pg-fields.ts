// Splits a PostgreSQL URL into discrete connection fields. The Prisma adapter creates shadow
// databases by overriding `database`, which a connectionString would mask.
export type PgFields = {
  host: string;
  port: number;
  user: string;
  password?: string;
  database: string;
  ssl?: boolean;
};

export function pgFields(url: string): PgFields {
  const u = new URL(url);
  const fields: PgFields = {
    // An IPv6 address stands in brackets in a URL ([::1]), not in a host name: the driver (and a password file's
    // line, src/demo/pass-file.ts) take it bare, as libpq does; with the brackets the driver looked it up as a name.
    host: decodeURIComponent(u.hostname).replace(/^\[(.*)\]$/, "$1") || "127.0.0.1",
    port: u.port ? Number(u.port) : 5432,
    user: decodeURIComponent(u.username) || "postgres",
    database: decodeURIComponent(u.pathname.replace(/^\//, "")) || "postgres",
  };
  if (u.password) fields.password = decodeURIComponent(u.password);
  const sslmode = u.searchParams.get("sslmode");
  if (sslmode && sslmode !== "disable") fields.ssl = true;
  return fields;
}

/** The same server and credentials, another database. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.toString();
}
