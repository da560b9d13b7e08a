import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/** `docker compose config` needs only the Docker CLI and its compose plugin, no engine. */
const composeVersion = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' });
const skipReason =
  composeVersion.error || composeVersion.status !== 0
    ? ` (skipped: ${composeVersion.error ? 'no docker CLI on PATH' : "the docker CLI has no compose plugin: 'docker compose version' failed"})`
    : '';

interface ComposeService {
  image?: string;
  depends_on?: Record<string, { condition: string }>;
}

describe('docker-compose.yml', () => {
  it.skipIf(skipReason !== '')(`is valid for docker compose and runs Temporal on pinned, maintained images${skipReason}`, () => {
    const result = spawnSync('docker', ['compose', 'config', '--format', 'json'], { encoding: 'utf8' });
    expect(result.status, result.stderr).toBe(0);
    const services = (JSON.parse(result.stdout) as { services: Record<string, ComposeService> }).services;

    const images = Object.values(services).flatMap((service) => (service.image ? [service.image] : []));
    expect(images.filter((image) => image.includes('auto-setup'))).toEqual([]);
    for (const image of images) expect(image).toMatch(/:\d+(\.\d+)*$/);
    expect(services.temporal?.image).toMatch(/^temporalio\/server:/);
    expect(services['temporal-schema']?.image).toMatch(/^temporalio\/admin-tools:/);
    expect(services['temporal-ui']?.image).toMatch(/^temporalio\/ui:/);

    // The schema is in place before the server starts, and the namespace before the service does.
    expect(services.temporal?.depends_on?.['temporal-schema']?.condition).toBe('service_completed_successfully');
    expect(services.api?.depends_on?.['temporal-namespace']?.condition).toBe('service_completed_successfully');
    expect(services.worker?.depends_on?.['temporal-namespace']?.condition).toBe('service_completed_successfully');

    const deployment = readFileSync('docs/operations/deployment.md', 'utf8');
    for (const image of images) expect(deployment, `docs/operations/deployment.md names ${image}`).toContain(`\`${image}\``);
  });
});
