/**
 * Resource types the FHIR endpoint keeps per organization, beyond the synthetic world every client
 * reads: each with the SMART permissions its interactions take (a system token's `system/<type>.<cruds>`
 * scopes grant these, smart/scopes.ts systemScope). Subscriptions are created, read, searched and
 * deleted; an update is not served. Claims are created through the Da Vinci PAS operations
 * (`Claim/$submit`, `Claim/$inquire` need `system/Claim.c`) and read and searched in the synthetic world.
 */
export const ORGANIZATION_RESOURCE_PERMISSIONS = {
  Subscription: ['create', 'read', 'delete', 'search'],
  Claim: ['create', 'read', 'search'],
} as const satisfies Readonly<Record<string, readonly ('create' | 'read' | 'update' | 'delete' | 'search')[]>>;
