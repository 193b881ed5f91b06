// The shape of dvault's mirror as PostgreSQL's catalog describes it: the tables its migrations create in the public
// schema (Prisma's ledger aside), each with the columns a dump carries (generated columns are made again on load,
// dropped ones are gone), the order foreign keys allow loading them in, and the sequences behind their ids. A
// backup of format 2 (src/backup/backup.ts) records these shapes; restore compares them with what the backup's
// migrations create.
import type pg from "pg";
import { quoteIdent } from "./connect.ts";

export type ColumnShape = { name: string; type: string };
export type TableShape = { name: string; columns: ColumnShape[] };

/** Prisma's ledger: its migration names go into a manifest, its rows are not dumped. */
export const LEDGER = "_prisma_migrations";

/**
 * Tables neither dumped nor loaded: the ledger (above), and the readable tree's marks of what changed since its last
 * write (migration 20261130090322_readable_tree_marks), which a restore has no use for: it rebuilds the tree, comparing
 * every file. A restore's migrations make it empty.
 */
const NOT_DUMPED = [LEDGER, "readable_tree_marks"];

const SHAPES = `SELECT c.relname AS tbl, a.attname AS col, format_type(a.atttypid, a.atttypmod) AS typ
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
  WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname <> ALL($1::text[]) AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
  ORDER BY c.relname, a.attnum`;

/** Every table of the mirror with its dumped columns, in the order of the catalog (by name; columns by position). */
export async function tableShapes(client: pg.ClientBase): Promise<TableShape[]> {
  const { rows } = await client.query(SHAPES, [NOT_DUMPED]);
  const tables = new Map<string, TableShape>();
  for (const r of rows as Array<{ tbl: string; col: string; typ: string }>) {
    let t = tables.get(r.tbl);
    if (!t) tables.set(r.tbl, (t = { name: r.tbl, columns: [] }));
    t.columns.push({ name: r.col, type: r.typ });
  }
  return [...tables.values()];
}

const REFERENCES = `SELECT child.relname AS child, parent.relname AS parent
  FROM pg_constraint k JOIN pg_class child ON child.oid = k.conrelid JOIN pg_class parent ON parent.oid = k.confrelid
  JOIN pg_namespace n ON n.oid = k.connamespace
  WHERE k.contype = 'f' AND n.nspname = 'public'`;

/**
 * `names` in an order where every table comes after the tables its foreign keys point at (a table pointing at
 * itself is loaded by one COPY, whose checks run at its end). A cycle between tables, which no migration makes
 * today, is refused rather than loaded half.
 */
export async function loadOrder(client: pg.ClientBase, names: string[]): Promise<string[]> {
  const { rows } = await client.query(REFERENCES);
  const needs = new Map(names.map((n) => [n, new Set<string>()]));
  for (const r of rows as Array<{ child: string; parent: string }>) if (r.child !== r.parent) needs.get(r.child)?.add(r.parent);
  const order: string[] = [];
  const left = new Set([...names].sort());
  while (left.size > 0) {
    const next = [...left].find((n) => [...(needs.get(n) ?? [])].every((p) => !left.has(p)));
    if (next === undefined) throw new Error(`the foreign keys between ${[...left].join(", ")} form a cycle: restore cannot order them`);
    order.push(next);
    left.delete(next);
  }
  return order;
}

/** The sequence a column owns (serial: an automatic dependency; identity: an internal one), as pg_get_serial_sequence finds it. */
const SERIALS = `SELECT t.relname AS tbl, a.attname AS col, format('%I.%I', sn.nspname, s.relname) AS seq
  FROM pg_depend d JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S' JOIN pg_namespace sn ON sn.oid = s.relnamespace
  JOIN pg_class t ON t.oid = d.refobjid JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
  WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
    AND t.relnamespace = 'public'::regnamespace AND t.relkind = 'r'`;

/** Every sequence behind a column (serial or identity) set past the largest value loaded, so new rows continue after it. */
export async function resetSequences(client: pg.ClientBase): Promise<number> {
  const { rows } = await client.query(SERIALS);
  for (const r of rows as Array<{ tbl: string; col: string; seq: string }>) {
    const col = quoteIdent(r.col);
    await client.query(`SELECT setval($1, coalesce(max(${col}), 1), max(${col}) IS NOT NULL) FROM ${quoteIdent(r.tbl)}`, [r.seq]);
  }
  return rows.length;
}

/** The COPY statement of one table's dumped columns, in their order; text format (src/backup/backup.ts says why). */
export function copyStatement(table: TableShape, direction: "TO STDOUT" | "FROM STDIN"): string {
  return `COPY ${quoteIdent(table.name)} (${table.columns.map((c) => quoteIdent(c.name)).join(", ")}) ${direction}`;
}
