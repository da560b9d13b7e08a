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

/** The ids of every contained resource anywhere inside a FHIR resource (a Bundle's entries included). */
export function containedIdsIn(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) for (const item of value) containedIdsIn(item, found);
  else if (value && typeof value === 'object') {
    for (const [field, child] of Object.entries(value)) {
      if (field === 'contained' && Array.isArray(child)) for (const resource of child) if (typeof resource?.id === 'string') found.push(resource.id);
      containedIdsIn(child, found);
    }
  }
  return found;
}
