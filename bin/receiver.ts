import { loadConfig } from '../platform/config';
import { createLogger } from '../platform/logger';
import { createRelayReceiver } from '../relay-receiver/app';
import { listen, stopOnSignal } from '../runtime/services';
import { runMain, UsageError } from './run-main';

/** `npm run receiver`: the demo relay receiver alone, verifying with the secrets you give it. */
runMain(async () => {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const secrets = config.RELAY_WEBHOOK_SECRETS ?? [];
  if (secrets.length === 0) {
    throw new UsageError(
      'The relay receiver needs the signing secret(s) to verify deliveries: set RELAY_WEBHOOK_SECRETS=sbx_whsec_... ' +
        '(comma-separated; a secret is shown in full when issued, e.g. PATCH /v1/settings/webhook {"rotate_secret": true}).',
    );
  }
  const app = createRelayReceiver({ secrets: async () => secrets, forwardUrl: config.RELAY_FORWARD_URL, logger });
  const server = await listen(app, config.HOST, config.RELAY_PORT, config.SHUTDOWN_GRACE_SECONDS);
  stopOnSignal(logger, [{ name: 'relay receiver', run: server.close }]);
  logger.info(
    `Relay receiver on http://localhost:${server.port} (POST /webhooks)${config.RELAY_FORWARD_URL ? `, forwarding to ${config.RELAY_FORWARD_URL}` : ''}`,
  );
});
