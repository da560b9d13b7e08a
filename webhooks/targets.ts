import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

/** Host names that reach cloud metadata services even when they resolve to public-looking records. */
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata', 'instance-data']);

/**
 * Why a webhook URL cannot be used, or null when it can. Only http(s) targets are allowed; private,
 * loopback, link-local and metadata addresses only when the operator allows them
 * (ALLOW_PRIVATE_TARGETS), because a delivery is a request our servers make on a partner's behalf.
 */
export async function webhookUrlProblem(value: string, allowPrivate: boolean): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must use http or https';
  if (allowPrivate) return null;
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (METADATA_HOSTS.has(host) || host === 'localhost' || host.endsWith('.localhost')) {
    return `points at ${host}, a private address; only public receivers are allowed here (the operator can set ALLOW_PRIVATE_TARGETS=true)`;
  }
  const addresses = ipaddr.isValid(host) ? [host] : await resolveQuietly(host);
  const privateAddress = addresses.find((address) => ipaddr.process(address).range() !== 'unicast');
  return privateAddress
    ? `resolves to ${privateAddress}, a private address; only public receivers are allowed here (the operator can set ALLOW_PRIVATE_TARGETS=true)`
    : null;
}

/** A name that does not resolve yet is accepted: every delivery attempt checks again and records the error. */
async function resolveQuietly(host: string): Promise<string[]> {
  try {
    return (await lookup(host, { all: true })).map((entry) => entry.address);
  } catch {
    return [];
  }
}
