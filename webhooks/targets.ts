import { lookup } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { domainToASCII } from 'node:url';
import ipaddr from 'ipaddr.js';
import { trimTrailing } from '../platform/text';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/**
 * Every address a host name resolves to. The system resolver in production; tests hand in their own
 * (a table, or answers that change between calls as a rebinding DNS server's would).
 */
export type ResolveHost = (hostname: string) => Promise<ResolvedAddress[]>;

export const resolveWithSystem: ResolveHost = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));

/** Host names that reach cloud metadata services even when they resolve to public-looking records. */
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata', 'instance-data']);

const PRIVATE_HINT = 'only public receivers are allowed here (the operator can set ALLOW_PRIVATE_TARGETS=true)';

/**
 * The host as every check compares it: IPv6 brackets and trailing dots gone (`localhost.` is
 * `localhost`), IDN labels in ASCII, lower case. The WHATWG URL parser has already mapped case and
 * Unicode for http(s) URLs; this makes the rule hold for any host string handed in.
 */
export function normalizeHost(hostname: string): string {
  const bare = trimTrailing(hostname.replace(/^\[|\]$/g, ''), '.');
  if (ipaddr.isValid(bare)) return bare.toLowerCase();
  return (domainToASCII(bare) || bare).toLowerCase();
}

/** A target that passed the check: where to send, and the addresses it was checked against. */
export interface CheckedTarget {
  url: URL;
  host: string;
  /** Empty when the name did not resolve; `resolveError` then says why. */
  addresses: ResolvedAddress[];
  resolveError: string | null;
}

/**
 * Checks a webhook URL: http(s) only; with private targets disallowed, no loopback, private,
 * link-local or metadata name or address, whatever form the host is written in. A name is
 * resolved once, here, and the send goes to these addresses (pinnedLookup), so a DNS answer that
 * changes afterwards (rebinding) cannot redirect it.
 */
export async function checkWebhookTarget(
  value: string,
  options: { allowPrivate: boolean; resolveHost: ResolveHost },
): Promise<CheckedTarget | { refused: string }> {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { refused: 'must be an absolute URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { refused: 'must use http or https' };
  const host = normalizeHost(url.hostname);
  if (!options.allowPrivate && (METADATA_HOSTS.has(host) || host === 'localhost' || host.endsWith('.localhost'))) {
    return { refused: `points at ${host}, a private address; ${PRIVATE_HINT}` };
  }
  let addresses: ResolvedAddress[] = [];
  let resolveError: string | null = null;
  if (ipaddr.isValid(host)) {
    addresses = [{ address: host, family: ipaddr.parse(host).kind() === 'ipv6' ? 6 : 4 }];
  } else {
    try {
      addresses = await options.resolveHost(host);
      if (addresses.length === 0) resolveError = `${host} has no addresses`;
    } catch (error) {
      resolveError = `${host} did not resolve (${(error as { code?: string }).code ?? (error as Error).message})`;
    }
  }
  const privateAddress = options.allowPrivate ? undefined : addresses.find((entry) => ipaddr.process(entry.address).range() !== 'unicast');
  if (privateAddress) return { refused: `resolves to ${privateAddress.address}, a private address; ${PRIVATE_HINT}` };
  return { url, host, addresses, resolveError };
}

/**
 * Why a webhook URL cannot be configured, or null when it can. A name that does not resolve yet is
 * accepted: every delivery attempt checks again and records the error.
 */
export async function webhookUrlProblem(value: string, allowPrivate: boolean, resolveHost: ResolveHost = resolveWithSystem): Promise<string | null> {
  // With private targets allowed no address is refused, so configuring needs no DNS lookup (sending does one).
  const checked = await checkWebhookTarget(value, { allowPrivate, resolveHost: allowPrivate ? async () => [] : resolveHost });
  return 'refused' in checked ? checked.refused : null;
}

/**
 * A DNS lookup (for net.connect and undici's connect options) that answers only the addresses a
 * target was checked against, whatever name it is asked for: the connection goes where the check
 * looked, while the Host header and the TLS server name stay the URL's.
 */
export function pinnedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    const usable = options.family === 4 || options.family === 6 ? addresses.filter((entry) => entry.family === options.family) : addresses;
    if (usable.length === 0) {
      callback(Object.assign(new Error('No checked address of the requested family'), { code: 'ENOTFOUND' }), '', 0);
      return;
    }
    if (options.all) callback(null, usable);
    else callback(null, usable[0]!.address, usable[0]!.family);
  };
}
