// The SQL the demo's report suggests a person run with psql against the demo's database (src/cli/demo.ts prints it).

/** Three questions people ask their archive, as SQL that runs against the demo's database. */
export const DEMO_QUERIES: Array<{ what: string; sql: string }> = [
  {
    what: "whose work fills my favourites",
    sql: "SELECT u.username, count(*) AS faves FROM folder_members fm JOIN deviations d USING (deviationid) JOIN users u ON u.userid = d.author_userid WHERE fm.kind = 'collection' AND fm.removed_at IS NULL GROUP BY u.username ORDER BY faves DESC LIMIT 5",
  },
  {
    what: "unread notes, newest first",
    sql: "SELECT n.ts::date AS day, u.username AS sender, n.subject FROM notes n LEFT JOIN users u ON u.userid = n.sender_userid WHERE n.unread ORDER BY n.ts DESC LIMIT 5",
  },
  {
    what: "what is on disk, and in what form",
    sql: "SELECT dl.status, dl.kind, count(*) AS files, pg_size_pretty(sum(dl.size)) AS size FROM downloads dl GROUP BY dl.status, dl.kind ORDER BY files DESC",
  },
];
