-- Issue 20: digests and alerts also go out through ntfy and Discord (src/digest/deliver/ntfy.ts and
-- discord.ts). Each keeps its own window and idempotency keys like the other channels, so the
-- digests table only needs the two new channel names.

-- AlterEnum
ALTER TYPE "digest_channel" ADD VALUE 'ntfy';
ALTER TYPE "digest_channel" ADD VALUE 'discord';
