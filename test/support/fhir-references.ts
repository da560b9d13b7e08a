/** Every `reference` string anywhere inside a FHIR resource (or any JSON value). */
export function referencesIn(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) for (const item of value) referencesIn(item, found);
  else if (value && typeof value === 'object') {
    for (const [field, child] of Object.entries(value)) {
      if (field === 'reference' && typeof child === 'string') found.push(child);
      else referencesIn(child, found);
    }
  }
  return found;
}
