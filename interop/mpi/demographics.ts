import type { Patient } from 'fhir/r4';

/** What the MPI compares: a record's demographics, normalized once when indexed or asked about. */
export interface Demographics {
  /** Normalized given names, first one first (`["nathaniel", "joseph"]`). */
  given: string[];
  family?: string;
  /** YYYY-MM-DD. */
  birthDate?: string;
  gender?: string;
  address?: { line?: string; city?: string; postalCode?: string };
  /** The last ten digits. */
  phone?: string;
  identifiers: { system: string; value: string }[];
}

/** Lower case, accents and punctuation dropped, hyphens and spaces kept as single spaces. */
export function normalizeName(value: string): string {
  return value
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/['.]/g, '')
    .replace(/[^a-z]+/g, ' ')
    .trim();
}

const STREET_WORDS: Record<string, string> = {
  street: 'st',
  avenue: 'ave',
  road: 'rd',
  drive: 'dr',
  lane: 'ln',
  boulevard: 'blvd',
  court: 'ct',
  place: 'pl',
  north: 'n',
  south: 's',
  east: 'e',
  west: 'w',
  apartment: 'apt',
  suite: 'ste',
};

/** Lower case, punctuation dropped, the usual street words abbreviated the USPS way. */
export function normalizeAddressLine(value: string): string {
  return value
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim()
    .split(' ')
    .map((word) => STREET_WORDS[word] ?? word)
    .join(' ');
}

export function normalizePhone(value: string): string | undefined {
  const digits = value.replace(/\D/g, '');
  return digits.length >= 10 ? digits.slice(-10) : undefined;
}

export function demographicsOf(patient: Patient): Demographics {
  const name = patient.name?.find((candidate) => candidate.use === 'official') ?? patient.name?.[0];
  const address = patient.address?.find((candidate) => candidate.use === 'home') ?? patient.address?.[0];
  const phone = patient.telecom?.find((contact) => contact.system === 'phone' && contact.value)?.value;
  const line = address?.line?.join(' ');
  const normalizedPhone = phone ? normalizePhone(phone) : undefined;
  return {
    given: (name?.given ?? []).map(normalizeName).filter(Boolean),
    ...(name?.family ? { family: normalizeName(name.family) } : {}),
    ...(patient.birthDate && /^\d{4}-\d{2}-\d{2}$/.test(patient.birthDate) ? { birthDate: patient.birthDate } : {}),
    ...(patient.gender ? { gender: patient.gender } : {}),
    ...(address && (line || address.postalCode || address.city)
      ? {
          address: {
            ...(line ? { line: normalizeAddressLine(line) } : {}),
            ...(address.city ? { city: normalizeName(address.city) } : {}),
            ...(address.postalCode ? { postalCode: address.postalCode.slice(0, 5) } : {}),
          },
        }
      : {}),
    ...(normalizedPhone ? { phone: normalizedPhone } : {}),
    identifiers: (patient.identifier ?? [])
      .filter((identifier) => identifier.system && identifier.value)
      .map((identifier) => ({ system: identifier.system!, value: identifier.value! })),
  };
}
