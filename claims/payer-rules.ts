import { z } from 'zod';
import { CARC, type CarcKey, SERVICES, type ServiceKey, SYSTEM } from '../fhir/terminology';
import { PAYERS, type PayerId, PLAN_TYPES } from './payers';

/**
 * Each synthetic payer's rules as data: scenarios and the fixture generator decide outcomes from
 * them (does this CPT code need prior auth, how long may a decision take, what does the member pay,
 * which CARC code explains a denial), so they are never prose.
 */

/** CMS-0057-F decision time frames for impacted payers: 72 hours expedited, 7 calendar days standard. */
export const CMS_0057_F_EXPEDITED_HOURS = 72;
export const CMS_0057_F_STANDARD_HOURS = 7 * 24;

const DOCUMENTATION = {
  clinical_notes: 'Office notes from the ordering clinician within the last 60 days',
  conservative_therapy: 'At least 6 weeks of failed conservative therapy (physical therapy, NSAIDs or activity modification)',
  prior_imaging: 'Report of plain radiographs of the same site taken within the last 6 months',
  red_flag_assessment: 'Documented neurological exam and red-flag screening (cauda equina, malignancy, infection)',
  imaging_report: 'Report of advanced imaging supporting the procedure',
  surgical_plan: 'Operative plan naming the procedure, site and facility',
  sleep_questionnaire: 'A validated sleep questionnaire (STOP-BANG or Epworth) with its score',
  sleep_study_report: 'Report of a diagnostic sleep study showing an apnea-hypopnea index of 5 or more',
  diagnosis_confirmation: 'Specialist documentation confirming the diagnosis',
  step_therapy: 'Record of an adequate trial and failure of a first-line conventional therapy',
  tuberculosis_screen: 'Negative tuberculosis screening result within the last 12 months',
} as const;

type DocumentationCode = keyof typeof DOCUMENTATION;

/** The clinical policy behind each service a payer may put on its prior-authorization list. */
const PRIOR_AUTH_POLICIES = {
  mriKnee: {
    documentation: ['clinical_notes', 'conservative_therapy', 'prior_imaging'],
    criteria: 'Knee pain with mechanical symptoms or failed conservative therapy after normal or non-diagnostic radiographs',
  },
  mriLumbar: {
    documentation: ['clinical_notes', 'conservative_therapy', 'red_flag_assessment'],
    criteria: 'Low back pain beyond 6 weeks of conservative therapy, or any red flag',
  },
  mriBrain: { documentation: ['clinical_notes', 'red_flag_assessment'], criteria: 'New focal neurological deficit or headache with red flags' },
  ctAbdomenPelvis: { documentation: ['clinical_notes'], criteria: 'Abdominal pain with abnormal exam or laboratory findings' },
  kneeArthroscopy: {
    documentation: ['clinical_notes', 'imaging_report', 'conservative_therapy'],
    criteria: 'Meniscal tear on MRI with mechanical symptoms',
  },
  totalKneeArthroplasty: {
    documentation: ['clinical_notes', 'imaging_report', 'conservative_therapy', 'surgical_plan'],
    criteria: 'Advanced osteoarthritis with functional limitation after 3 months of conservative therapy',
  },
  lumbarDiscectomy: {
    documentation: ['clinical_notes', 'imaging_report', 'conservative_therapy', 'surgical_plan'],
    criteria: 'Radiculopathy concordant with imaging after 6 weeks of conservative therapy',
  },
  sleepStudy: {
    documentation: ['clinical_notes', 'sleep_questionnaire'],
    criteria: 'Suspected obstructive sleep apnea with a positive screening questionnaire',
  },
  cpapDevice: { documentation: ['sleep_study_report'], criteria: 'Obstructive sleep apnea confirmed by a sleep study' },
  adalimumab: {
    documentation: ['diagnosis_confirmation', 'step_therapy', 'tuberculosis_screen'],
    criteria: 'Moderate to severe inflammatory disease after failure of conventional therapy',
  },
  infliximab: {
    documentation: ['diagnosis_confirmation', 'step_therapy', 'tuberculosis_screen'],
    criteria: 'Moderate to severe inflammatory disease after failure of conventional therapy',
  },
} satisfies Partial<Record<ServiceKey, { documentation: DocumentationCode[]; criteria: string }>>;

type PriorAuthService = keyof typeof PRIOR_AUTH_POLICIES;

const DENIAL_SITUATIONS = {
  authorizationAbsent: 'A service on the prior-authorization list was billed without an approved authorization',
  notMedicallyNecessary: 'The clinical documentation does not meet the policy criteria',
  missingInformation: 'A required claim field is missing or invalid (member id, NPI, diagnosis pointer)',
  coverageTerminated: 'The date of service is after the coverage end date',
  timelyFiling: 'The claim arrived after the timely-filing limit',
  duplicate: 'The same service for the same date was already adjudicated',
  notCoveredByPlan: 'The service is excluded from the member’s benefit plan',
  coordinationOfBenefits: 'Another payer is primary for this member',
  referralAbsent: 'A specialist visit was billed without a referral from the primary care provider',
} satisfies Partial<Record<CarcKey, string>>;

type DenialKey = keyof typeof DENIAL_SITUATIONS;

const GROUP_CODES = ['CO', 'PR', 'OA', 'PI'] as const;

export const payerRulesSchema = z
  .object({
    payer_id: z.string().meta({ example: 'syn-payer-alderpeak' }),
    name: z.string(),
    plan_type: z.enum(PLAN_TYPES),
    organization: z
      .string()
      .meta({ description: 'The payer as a FHIR reference into the synthetic world', example: 'Organization/syn-payer-alderpeak' }),
    cms_0057_f_impacted: z.boolean().meta({
      description:
        'Whether CMS-0057-F binds this plan type (Medicare Advantage, Medicaid, CHIP, marketplace plans); the others keep to its bounds voluntarily',
    }),
    prior_authorization: z.object({
      standard_turnaround_hours: z.number().int().max(CMS_0057_F_STANDARD_HOURS),
      expedited_turnaround_hours: z.number().int().max(CMS_0057_F_EXPEDITED_HOURS),
      approval_valid_days: z.number().int(),
      submission_channels: z.array(z.enum(['fhir_pas', 'x12_278', 'portal'])),
      services: z.array(
        z.object({
          code: z.string().meta({ example: '72148' }),
          code_system: z.enum(['CPT', 'HCPCS']),
          system: z.string().meta({ description: 'The code system URI, as in FHIR codings' }),
          display: z.string(),
          criteria: z.string(),
          required_documentation: z.array(z.object({ code: z.string(), description: z.string() })),
        }),
      ),
    }),
    eligibility: z.object({
      real_time_270_271: z.boolean(),
      search_keys: z
        .array(z.array(z.enum(['member_id', 'first_name', 'last_name', 'birth_date'])))
        .meta({ description: 'Each entry is one combination of fields that identifies a member' }),
      referral_required_for_specialist: z.boolean(),
      pcp_assignment_required: z.boolean(),
      dependent_max_age: z.number().int().nullable(),
      cost_sharing: z.object({
        primary_care_copay: z.number(),
        specialist_copay: z.number(),
        emergency_copay: z.number(),
        annual_deductible: z.number(),
        coinsurance_percent: z.number().int().min(0).max(100),
        preventive_covered_in_full: z.boolean(),
      }),
    }),
    claims: z.object({
      timely_filing_days: z.number().int(),
      allowed_percent_of_charges: z.number().int().min(1).max(100).meta({ description: 'The allowed amount as a share of the sandbox list price' }),
      payment_cycle_days: z.number().int(),
    }),
    denial_reasons: z.array(
      z.object({
        carc: z.string().meta({ description: 'X12 Claim Adjustment Reason Code', example: '197' }),
        group_code: z.enum(GROUP_CODES),
        description: z.string(),
        when: z.string(),
      }),
    ),
  })
  .meta({ id: 'PayerRules' });

export type PayerRules = z.infer<typeof payerRulesSchema>;

interface PayerPolicy {
  cms0057fImpacted: boolean;
  standardHours: number;
  expeditedHours: number;
  approvalValidDays: number;
  channels: PayerRules['prior_authorization']['submission_channels'];
  priorAuth: PriorAuthService[];
  eligibility: PayerRules['eligibility'];
  timelyFilingDays: number;
  allowedPercent: number;
  denials: DenialKey[];
}

const MEMBER_ID_AND_BIRTH_DATE: PayerRules['eligibility']['search_keys'][number] = ['member_id', 'birth_date'];
const NAME_AND_BIRTH_DATE: PayerRules['eligibility']['search_keys'][number] = ['first_name', 'last_name', 'birth_date'];
const COMMON_DENIALS: DenialKey[] = [
  'authorizationAbsent',
  'notMedicallyNecessary',
  'missingInformation',
  'coverageTerminated',
  'timelyFiling',
  'duplicate',
  'notCoveredByPlan',
];

const POLICIES: Record<PayerId, PayerPolicy> = {
  'syn-payer-alderpeak': {
    cms0057fImpacted: false,
    standardHours: 120,
    expeditedHours: 48,
    approvalValidDays: 90,
    channels: ['fhir_pas', 'x12_278', 'portal'],
    priorAuth: ['mriLumbar', 'mriBrain', 'ctAbdomenPelvis', 'totalKneeArthroplasty', 'lumbarDiscectomy', 'sleepStudy', 'adalimumab', 'infliximab'],
    eligibility: {
      real_time_270_271: true,
      search_keys: [MEMBER_ID_AND_BIRTH_DATE, NAME_AND_BIRTH_DATE],
      referral_required_for_specialist: false,
      pcp_assignment_required: false,
      dependent_max_age: 26,
      cost_sharing: {
        primary_care_copay: 25,
        specialist_copay: 50,
        emergency_copay: 250,
        annual_deductible: 1500,
        coinsurance_percent: 20,
        preventive_covered_in_full: true,
      },
    },
    timelyFilingDays: 180,
    allowedPercent: 68,
    denials: [...COMMON_DENIALS, 'coordinationOfBenefits'],
  },
  'syn-payer-bramblewood': {
    cms0057fImpacted: false,
    standardHours: 168,
    expeditedHours: 72,
    approvalValidDays: 60,
    channels: ['x12_278', 'portal'],
    priorAuth: [
      'mriKnee',
      'mriLumbar',
      'mriBrain',
      'ctAbdomenPelvis',
      'kneeArthroscopy',
      'totalKneeArthroplasty',
      'lumbarDiscectomy',
      'sleepStudy',
      'cpapDevice',
      'adalimumab',
      'infliximab',
    ],
    eligibility: {
      real_time_270_271: true,
      search_keys: [MEMBER_ID_AND_BIRTH_DATE],
      referral_required_for_specialist: true,
      pcp_assignment_required: true,
      dependent_max_age: 26,
      cost_sharing: {
        primary_care_copay: 20,
        specialist_copay: 45,
        emergency_copay: 300,
        annual_deductible: 500,
        coinsurance_percent: 10,
        preventive_covered_in_full: true,
      },
    },
    timelyFilingDays: 90,
    allowedPercent: 61,
    denials: [...COMMON_DENIALS, 'referralAbsent'],
  },
  'syn-payer-silverharbor': {
    cms0057fImpacted: true,
    standardHours: 168,
    expeditedHours: 72,
    approvalValidDays: 90,
    channels: ['fhir_pas', 'x12_278', 'portal'],
    priorAuth: ['mriKnee', 'mriLumbar', 'mriBrain', 'totalKneeArthroplasty', 'lumbarDiscectomy', 'cpapDevice', 'infliximab'],
    eligibility: {
      real_time_270_271: true,
      search_keys: [MEMBER_ID_AND_BIRTH_DATE, NAME_AND_BIRTH_DATE],
      referral_required_for_specialist: true,
      pcp_assignment_required: true,
      dependent_max_age: null,
      cost_sharing: {
        primary_care_copay: 0,
        specialist_copay: 35,
        emergency_copay: 110,
        annual_deductible: 0,
        coinsurance_percent: 20,
        preventive_covered_in_full: true,
      },
    },
    timelyFilingDays: 365,
    allowedPercent: 55,
    denials: [...COMMON_DENIALS, 'referralAbsent', 'coordinationOfBenefits'],
  },
  'syn-payer-meadowlark': {
    cms0057fImpacted: true,
    standardHours: 168,
    expeditedHours: 72,
    approvalValidDays: 60,
    channels: ['fhir_pas', 'portal'],
    priorAuth: [
      'mriKnee',
      'mriLumbar',
      'mriBrain',
      'ctAbdomenPelvis',
      'kneeArthroscopy',
      'totalKneeArthroplasty',
      'lumbarDiscectomy',
      'sleepStudy',
      'cpapDevice',
      'adalimumab',
      'infliximab',
    ],
    eligibility: {
      real_time_270_271: true,
      search_keys: [MEMBER_ID_AND_BIRTH_DATE, NAME_AND_BIRTH_DATE],
      referral_required_for_specialist: false,
      pcp_assignment_required: true,
      dependent_max_age: 21,
      cost_sharing: {
        primary_care_copay: 0,
        specialist_copay: 0,
        emergency_copay: 0,
        annual_deductible: 0,
        coinsurance_percent: 0,
        preventive_covered_in_full: true,
      },
    },
    timelyFilingDays: 365,
    allowedPercent: 45,
    denials: [...COMMON_DENIALS, 'coordinationOfBenefits'],
  },
  'syn-payer-tidewater': {
    cms0057fImpacted: false,
    standardHours: 96,
    expeditedHours: 48,
    approvalValidDays: 120,
    channels: ['x12_278', 'portal'],
    priorAuth: ['totalKneeArthroplasty', 'lumbarDiscectomy', 'adalimumab'],
    eligibility: {
      real_time_270_271: false,
      search_keys: [MEMBER_ID_AND_BIRTH_DATE],
      referral_required_for_specialist: false,
      pcp_assignment_required: false,
      dependent_max_age: 26,
      cost_sharing: {
        primary_care_copay: 30,
        specialist_copay: 60,
        emergency_copay: 350,
        annual_deductible: 2500,
        coinsurance_percent: 20,
        preventive_covered_in_full: true,
      },
    },
    timelyFilingDays: 120,
    allowedPercent: 74,
    denials: COMMON_DENIALS,
  },
  'syn-payer-juniper': {
    cms0057fImpacted: true,
    standardHours: 168,
    expeditedHours: 72,
    approvalValidDays: 90,
    channels: ['fhir_pas', 'x12_278', 'portal'],
    priorAuth: ['mriKnee', 'mriLumbar', 'mriBrain', 'ctAbdomenPelvis', 'totalKneeArthroplasty', 'sleepStudy', 'adalimumab'],
    eligibility: {
      real_time_270_271: true,
      search_keys: [MEMBER_ID_AND_BIRTH_DATE, NAME_AND_BIRTH_DATE],
      referral_required_for_specialist: false,
      pcp_assignment_required: false,
      dependent_max_age: 26,
      cost_sharing: {
        primary_care_copay: 40,
        specialist_copay: 80,
        emergency_copay: 400,
        annual_deductible: 4000,
        coinsurance_percent: 30,
        preventive_covered_in_full: true,
      },
    },
    timelyFilingDays: 180,
    allowedPercent: 58,
    denials: COMMON_DENIALS,
  },
};

function codeSystemName(system: string): 'CPT' | 'HCPCS' {
  return system === SYSTEM.hcpcs ? 'HCPCS' : 'CPT';
}

function toRules(payer: (typeof PAYERS)[number]): PayerRules {
  const policy = POLICIES[payer.id];
  return {
    payer_id: payer.id,
    name: payer.name,
    plan_type: payer.planType,
    organization: `Organization/${payer.id}`,
    cms_0057_f_impacted: policy.cms0057fImpacted,
    prior_authorization: {
      standard_turnaround_hours: policy.standardHours,
      expedited_turnaround_hours: policy.expeditedHours,
      approval_valid_days: policy.approvalValidDays,
      submission_channels: policy.channels,
      services: policy.priorAuth.map((key) => {
        const { code } = SERVICES[key];
        const policyOfService = PRIOR_AUTH_POLICIES[key];
        return {
          code: code.code,
          code_system: codeSystemName(code.system),
          system: code.system,
          display: code.display,
          criteria: policyOfService.criteria,
          required_documentation: policyOfService.documentation.map((documentation) => ({
            code: documentation,
            description: DOCUMENTATION[documentation],
          })),
        };
      }),
    },
    eligibility: policy.eligibility,
    claims: { timely_filing_days: policy.timelyFilingDays, allowed_percent_of_charges: policy.allowedPercent, payment_cycle_days: 7 },
    denial_reasons: policy.denials.map((key) => ({
      carc: CARC[key].code,
      group_code: key === 'coordinationOfBenefits' ? 'OA' : 'CO',
      description: CARC[key].description,
      when: DENIAL_SITUATIONS[key],
    })),
  };
}

export const payerRules: ReadonlyMap<string, PayerRules> = new Map(PAYERS.map((payer) => [payer.id, toRules(payer)]));

export function findPayerRules(payerId: string): PayerRules | undefined {
  return payerRules.get(payerId);
}

/** Whether the payer needs an approved authorization before this CPT/HCPCS code is performed. */
export function requiresPriorAuth(rules: PayerRules, code: string): boolean {
  return rules.prior_authorization.services.some((service) => service.code === code);
}
