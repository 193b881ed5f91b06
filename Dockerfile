# dvault worker image. Node 22 (LTS); runs as the unprivileged "node" user.
# Written with care but not built on the development machines (no Docker engine there): see README.
FROM node:22-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts ./scripts
COPY prisma ./prisma
COPY prisma.config.ts ./
COPY src/config-defaults.ts src/db/pg-fields.ts ./src-stub/
# postinstall generates the Prisma client; it needs the schema and prisma.config.ts's imports.
RUN mkdir -p src/db && cp src-stub/config-defaults.ts src/ && cp src-stub/pg-fields.ts src/db/ \
 && npm ci --omit=dev --no-audit --no-fund

FROM node:22-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json prisma.config.ts tsconfig.json ./
COPY bin ./bin
COPY scripts ./scripts
COPY prisma ./prisma
COPY src ./src
COPY jobs ./jobs
COPY --from=deps /app/src/generated ./src/generated
RUN mkdir -p /archive /config && chown node:node /archive /config
USER node
VOLUME ["/archive", "/config"]
# The prisma CLI stays in the image: every long-running command applies pending migrations at start.
ENTRYPOINT ["node", "/app/bin/dvault.js"]
CMD ["worker"]
