/**
 * The sandbox's domains: the clinical and admin/revenue areas a partner integrates with, and the
 * platform's own webhook reliability. Events name their domain (catalog/events.ts); scenarios touch
 * the domains of the events their steps emit (catalog/scenarios.ts).
 */
export const DOMAIN_CATEGORIES = ['clinical', 'admin_revenue', 'platform'] as const;
export type DomainCategory = (typeof DOMAIN_CATEGORIES)[number];

export interface DomainDefinition {
  id: string;
  name: string;
  category: DomainCategory;
  description: string;
  /** The messages and specifications this domain mirrors. */
  standards: readonly string[];
  /** FHIR resource types this domain's events carry and its fixtures hold. */
  resourceTypes: readonly string[];
}

export const domains: readonly DomainDefinition[] = [
  {
    id: 'adt',
    name: 'ADT (admit, discharge, transfer)',
    category: 'clinical',
    description: 'Patient registration and movement: admissions, outpatient registrations, transfers between units and discharges.',
    standards: ['HL7 v2 ADT^A01, A02, A03, A04, A08, A28, A31, A40', 'FHIR R4 Encounter, Patient'],
    resourceTypes: ['Encounter', 'Patient', 'Location'],
  },
  {
    id: 'results',
    name: 'Results',
    category: 'clinical',
    description: 'Laboratory and imaging results as they are finalised: single observations and the reports that group them.',
    standards: ['HL7 v2 ORU^R01', 'LOINC', 'UCUM', 'FHIR R4 Observation, DiagnosticReport'],
    resourceTypes: ['Observation', 'DiagnosticReport'],
  },
  {
    id: 'orders',
    name: 'Orders',
    category: 'clinical',
    description: 'Orders for laboratory tests, imaging and referrals, as the ordering clinician places them.',
    standards: ['HL7 v2 ORM^O01 / OML^O21', 'CPT', 'FHIR R4 ServiceRequest'],
    resourceTypes: ['ServiceRequest'],
  },
  {
    id: 'scheduling',
    name: 'Scheduling',
    category: 'clinical',
    description: 'Appointments booked, rescheduled and cancelled.',
    standards: ['HL7 v2 SIU^S12, S15', 'FHIR R4 Appointment'],
    resourceTypes: ['Appointment'],
  },
  {
    id: 'documents',
    name: 'Clinical documents',
    category: 'clinical',
    description:
      'Clinical notes and summaries (progress notes, discharge summaries) as they become available, and patient records assembled from several sources (aggregator queries).',
    standards: ['HL7 v2 MDM^T02', 'FHIR R4 DocumentReference', 'FHIR R4 Bundle, Provenance, Task (aggregator queries)'],
    resourceTypes: ['DocumentReference', 'Task'],
  },
  {
    id: 'medications',
    name: 'Medications',
    category: 'clinical',
    description: 'Prescriptions written for patients, coded in RxNorm, and vaccines given, coded in CVX.',
    standards: ['HL7 v2 RDE^O11, VXU^V04', 'RxNorm', 'CVX', 'FHIR R4 MedicationRequest, Immunization'],
    resourceTypes: ['MedicationRequest', 'Immunization'],
  },
  {
    id: 'hl7',
    name: 'HL7 v2 interfaces',
    category: 'clinical',
    description:
      'Every HL7 v2 message a partner sends to the inject or the MLLP listener, of any type, trigger and version, delivered as the FHIR message Bundle the v2-to-FHIR IG maps it to.',
    standards: ['HL7 v2.1–2.8', 'HL7 v2-to-FHIR IG', 'FHIR R4 Bundle (message), MessageHeader'],
    resourceTypes: ['Bundle'],
  },
  {
    id: 'eligibility',
    name: 'Eligibility and benefits',
    category: 'admin_revenue',
    description: 'Coverage checks before care: is the member covered on the date of service, and what will they pay.',
    standards: ['X12 270/271', 'FHIR R4 CoverageEligibilityRequest, CoverageEligibilityResponse'],
    resourceTypes: ['Coverage', 'CoverageEligibilityRequest', 'CoverageEligibilityResponse', 'Bundle'],
  },
  {
    id: 'prior_auth',
    name: 'Prior authorization',
    category: 'admin_revenue',
    description: 'Requests for approval before a service the payer lists, and the payer’s decisions within the CMS-0057-F time frames.',
    standards: ['X12 278', 'Da Vinci PAS (Claim and ClaimResponse, use preauthorization)', 'CMS-0057-F'],
    resourceTypes: ['Claim', 'ClaimResponse'],
  },
  {
    id: 'claims',
    name: 'Claims',
    category: 'admin_revenue',
    description: 'Charges posted for visits, professional claims and their adjudication, line by line, with CARC reasons for what was not paid.',
    standards: ['HL7 v2 DFT^P03', 'X12 837P', 'CARC', 'FHIR R4 ChargeItem, Claim, ClaimResponse, ExplanationOfBenefit'],
    resourceTypes: ['ChargeItem', 'Claim', 'ClaimResponse', 'ExplanationOfBenefit', 'Bundle'],
  },
  {
    id: 'remittance',
    name: 'Remittance',
    category: 'admin_revenue',
    description: 'Payments from payers to providers, batched weekly, each detailing the claims it settles.',
    standards: ['X12 835', 'FHIR R4 PaymentReconciliation'],
    resourceTypes: ['PaymentReconciliation'],
  },
  {
    id: 'credentialing',
    name: 'Credentialing',
    category: 'admin_revenue',
    description: 'Practitioners’ identities and qualifications: NPIs, NUCC taxonomies, primary-source verification.',
    standards: [
      'NPPES NPI (Luhn check digit, 80840 prefix)',
      'NUCC Health Care Provider Taxonomy',
      'FHIR R4 Practitioner, PractitionerRole, VerificationResult',
    ],
    resourceTypes: ['Practitioner', 'PractitionerRole', 'Organization', 'VerificationResult', 'Bundle'],
  },
  {
    id: 'webhook_reliability',
    name: 'Webhook reliability',
    category: 'platform',
    description: 'How the sandbox itself reports on deliveries to your receiver: retries exhausted, chaos modes applied.',
    standards: ['Standard Webhooks', 'FHIR R4 AuditEvent'],
    resourceTypes: ['AuditEvent'],
  },
];
