import { parseArgs } from 'node:util';
import Table from 'cli-table3';
import { loadConfig } from '../platform/config';
import { openDatabase } from '../platform/database';
import { createOrganization, findOrganization, issueApiKey, listApiKeys, revokeApiKey } from '../platform/organizations';
import { runMain, UsageError } from './run-main';

const USAGE = `Provision API keys (onboarding). Only a key's hash is stored: the key is printed once.

  npm run keys -- create --org "Acme Health"     new organization and its first key
  npm run keys -- create --org-id org_...        another key for an existing organization
  npm run keys -- list                           every key (hint, organization, state)
  npm run keys -- revoke <key id or the key>     the key stops working within a second, on every API process

Options: --name <label> names the key (create).`;

runMain(async () => {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { org: { type: 'string' }, 'org-id': { type: 'string' }, name: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  const [command, argument] = positionals;
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = loadConfig();
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR });
  try {
    if (command === 'create') {
      let organizationId = values['org-id'];
      if (organizationId) {
        if (!(await findOrganization(database.db, organizationId)))
          throw new UsageError(`No organization ${organizationId}. \`npm run keys -- list\` shows them.`);
      } else if (values.org?.trim()) {
        organizationId = (await createOrganization(database.db, { name: values.org.trim() })).id;
      } else {
        throw new UsageError('create needs --org "Organization name" (a new organization) or --org-id org_... (an existing one).');
      }
      const issued = await issueApiKey(database.db, organizationId, values.name ? { name: values.name } : {});
      process.stdout.write(
        `Organization ${organizationId}\nKey id       ${issued.id}\nAPI key      ${issued.key}\n\nStore the key now: it is not shown again.\n`,
      );
    } else if (command === 'list') {
      const keys = await listApiKeys(database.db);
      if (keys.length === 0) process.stdout.write('No API keys yet. Create one with: npm run keys -- create --org "Acme Health"\n');
      else {
        const table = new Table({ head: ['key id', 'hint', 'name', 'organization', 'created', 'state'], style: { head: [], border: [] } });
        for (const key of keys) {
          table.push([
            key.id,
            key.hint,
            key.name ?? '',
            `${key.organizationName}\n${key.organizationId}`,
            key.createdAt.toISOString(),
            key.revokedAt ? `revoked ${key.revokedAt.toISOString()}` : 'active',
          ]);
        }
        process.stdout.write(`${table.toString()}\n`);
      }
    } else if (command === 'revoke') {
      if (!argument) throw new UsageError('revoke needs the key id (key_...) or the key itself.');
      const revoked = await revokeApiKey(database.db, argument);
      if (!revoked) throw new UsageError(`No active key matches ${argument}. \`npm run keys -- list\` shows them.`);
      process.stdout.write('Revoked. Every API process refuses the key with 401 within a second.\n');
    } else {
      throw new UsageError(`Unknown command "${command}".\n\n${USAGE}`);
    }
  } finally {
    await database.close();
  }
});
