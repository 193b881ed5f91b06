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
    host: decodeURIComponent(u.hostname) || "127.0.0.1",
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
