#!/usr/bin/env bash
# Writes prisma/migrations/<timestamp>_<name>/migration.sql as the diff between the schema in HEAD and
# the working prisma/schema/ folder (`prisma migrate dev` is unreliable without native engines).
# Usage: scripts/new-migration.sh <name>
set -euo pipefail
name=${1:?usage: scripts/new-migration.sh <name>}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/empty.node" # any existing file stops prisma from trying to download a query engine
# The schema in HEAD: the folder, or the single file it was before it split by area.
if git cat-file -e HEAD:prisma/schema 2>/dev/null; then
  mkdir "$tmp/old"
  git archive HEAD prisma/schema | tar -x -C "$tmp/old"
  old="$tmp/old/prisma/schema"
else
  git show HEAD:prisma/schema.prisma > "$tmp/old.prisma"
  old="$tmp/old.prisma"
fi
dir="prisma/migrations/$(date -u +%Y%m%d%H%M%S)_${name}"
mkdir -p "$dir"
DATABASE_URL=${DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/postgres} PRISMA_QUERY_ENGINE_LIBRARY="$tmp/empty.node" \
  npx prisma migrate diff --from-schema-datamodel "$old" --to-schema-datamodel prisma/schema --script \
  > "$dir/migration.sql"
if ! grep -qv '^\s*\(--.*\)\?$' "$dir/migration.sql"; then
  rm -rf "$dir"
  echo "no schema change: nothing written" >&2
  exit 1
fi
echo "wrote $dir/migration.sql — read it: a change that drops archived data must carry it forward"
