/**
 * The HL7 domain's vocabulary stored in tables. It imports nothing, so every layer may use it, the
 * drizzle schema included (CONVENTIONS.md, Layers).
 */

/**
 * How strictly an inbound HL7 v2 message is checked: `lenient` (findings are warnings on an AA, as
 * production listeners answer) or `strict` (findings are errors, AE), per HL7 identity and per request.
 */
export const HL7_CONFORMANCE_MODES = ['lenient', 'strict'] as const;
export type Hl7ConformanceMode = (typeof HL7_CONFORMANCE_MODES)[number];
