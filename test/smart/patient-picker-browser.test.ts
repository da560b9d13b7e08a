import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { displayName } from '../../api/smart/oauth-pages';
import { startTestService, type TestService } from '../support/service';
import { authorizationParams, pkcePair, postForm, registerSmartClient } from '../support/smart';

/** Debian's `chromium` package; .ci/run installs it. Without it this file is skipped, saying why. */
const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
const ARTIFACTS = fileURLToPath(new URL('../artifacts/', import.meta.url));

let service: TestService;
let browser: BrowserContext;
let profile: string;
let receiver: Server;
let receiverUrl: string;

describe.skipIf(!hasChromium)(
  `the patient picker in headless Chromium${hasChromium ? '' : ` (skipped: ${CHROMIUM} is missing; install Debian's chromium package)`}`,
  () => {
    beforeAll(async () => {
      service = await startTestService();
      profile = mkdtempSync(join(tmpdir(), 'sandbox-chromium-'));
      browser = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
      // The app's redirect URI: a page that just says it got an answer.
      receiver = createServer((_req, res) =>
        res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>App</title><p>Back in the app</p>'),
      );
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/callback`;
    });
    afterAll(async () => {
      await browser?.close();
      await new Promise((resolve) => receiver?.close(resolve));
      await service?.stop();
      if (profile) rmSync(profile, { recursive: true, force: true });
    });

    it('lets a person search the synthetic patients and choose one, and the app gets that patient as context', async () => {
      const tenant = await service.newTenant();
      const client = await registerSmartClient(service, tenant.key, { redirect_uris: [receiverUrl] });
      const pkce = pkcePair();
      const params = authorizationParams(service, client, pkce.challenge);
      const chosen = service.fhirStore.patients().at(-1)!;
      const name = chosen.name![0]!;
      // As a person types: the given name and the start of the family name.
      const query = `${name.given![0]} ${name.family!.slice(0, 3)}`;

      const page = await browser.newPage();
      await page.goto(`${service.baseUrl}/oauth/authorize?${new URLSearchParams(params)}`);
      await expect.poll(() => page.title()).toContain('Choose a patient');
      expect(await page.locator('tbody tr').count()).toBeGreaterThan(0);

      await page.getByLabel('Name or id').fill(query);
      await Promise.all([page.waitForURL(/[?&]q=/), page.getByRole('button', { name: 'Search' }).click()]);
      const rows = page.locator('tbody tr');
      expect(await rows.count()).toBeGreaterThan(0);
      for (const text of await rows.allInnerTexts()) {
        for (const word of query.toLowerCase().split(' ')) expect(text.toLowerCase()).toContain(word);
      }
      expect(await page.locator('tbody tr', { hasText: chosen.id! }).count()).toBe(1);
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'patient-picker.png'), fullPage: true });

      await Promise.all([
        page.waitForURL((url) => url.href.startsWith(receiverUrl)),
        page
          .locator('tbody tr', { hasText: chosen.id! })
          .getByRole('button', { name: `Choose ${displayName(chosen)}` })
          .click(),
      ]);
      const landed = new URL(page.url());
      expect(landed.searchParams.get('state')).toBe(params.state);
      const code = landed.searchParams.get('code')!;
      expect(code).toEqual(expect.any(String));

      const tokens = await postForm(service, '/oauth/token', {
        grant_type: 'authorization_code',
        code,
        code_verifier: pkce.verifier,
        redirect_uri: receiverUrl,
        client_id: client.client_id,
      });
      expect(tokens.status).toBe(200);
      expect(tokens.body.patient).toBe(chosen.id);
    });
  },
);
