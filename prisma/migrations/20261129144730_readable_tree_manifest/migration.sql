-- What the readable tree on disk holds (issue 32): every `download --once` that stored a file, and the worker when the
-- tree was marked dirty, rewrote every link of by-user/ from the database, about 155 us a link (2.5 minutes a run at a
-- million works, docs/PERFORMANCE.md#readable-tree). These tables record, per stored file, the fingerprint of the
-- placement rows its links were last made from and the links themselves, so a write touches only the files whose
-- rows changed (src/downloads/readable-links.ts). readable_tree_sweeps holds one row once the tree was rebuilt in
-- full and swept of links the record does not hold: without it (every archive after this migration, or a rebuild
-- cut short) the next write rebuilds the tree.

-- CreateTable
CREATE TABLE "readable_tree_sources" (
    "deviationid" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,

    CONSTRAINT "readable_tree_sources_pkey" PRIMARY KEY ("deviationid")
);

-- CreateTable
CREATE TABLE "readable_tree_links" (
    "link_path" TEXT NOT NULL,
    "deviationid" TEXT NOT NULL,

    CONSTRAINT "readable_tree_links_pkey" PRIMARY KEY ("link_path")
);

-- CreateTable
CREATE TABLE "readable_tree_sweeps" (
    "id" SMALLINT NOT NULL CHECK ("id" = 1),
    "swept_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "readable_tree_sweeps_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "readable_tree_links_deviationid_idx" ON "readable_tree_links"("deviationid");

