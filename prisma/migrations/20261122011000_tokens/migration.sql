-- CreateEnum
CREATE TYPE "account_kind" AS ENUM ('user', 'client');

-- CreateEnum
CREATE TYPE "grant_type" AS ENUM ('authorization_code', 'implicit', 'client_credentials', 'imported');

-- CreateEnum
CREATE TYPE "client_auth" AS ENUM ('basic', 'form', 'none');

-- CreateEnum
CREATE TYPE "token_state" AS ENUM ('ok', 'expiring', 'needs_reauth', 'revoked');

-- AlterTable
ALTER TABLE "accounts" ADD COLUMN     "access_expires_at" TIMESTAMPTZ(3),
ADD COLUMN     "access_issued_at" TIMESTAMPTZ(3),
ADD COLUMN     "access_token_enc" BYTEA,
ADD COLUMN     "client_auth" "client_auth" NOT NULL DEFAULT 'basic',
ADD COLUMN     "client_id" TEXT,
ADD COLUMN     "grant_started_at" TIMESTAMPTZ(3),
ADD COLUMN     "grant_type" "grant_type",
ADD COLUMN     "kind" "account_kind" NOT NULL DEFAULT 'user',
ADD COLUMN     "last_refresh_at" TIMESTAMPTZ(3),
ADD COLUMN     "refresh_issued_at" TIMESTAMPTZ(3),
ADD COLUMN     "refresh_token_enc" BYTEA,
ADD COLUMN     "refresh_token_fingerprint" TEXT,
ADD COLUMN     "scopes" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "state" "token_state" NOT NULL DEFAULT 'ok',
ADD COLUMN     "state_changed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
ADD COLUMN     "state_reason" TEXT;

-- CreateIndex
CREATE INDEX "accounts_kind_client_id_idx" ON "accounts"("kind", "client_id");

