// Placeholder for npm scripts whose issue has not landed yet: says so and exits non-zero.
const [name, why] = process.argv.slice(2);
console.error(`dvault: 'npm run ${name}' is not available yet: ${why}.`);
process.exit(2);
