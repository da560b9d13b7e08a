import type { Immunization, MedicationAdministration, MedicationRequest } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { renderTemplate } from '../../../hl7/templates';
import { all, bundleOf, mapped, msh, one, PID } from './messages';

/** hl7/to-fhir/pharmacy.ts: RXO, RXE, RXA, with the RXR after them. */

describe('pharmacy', () => {
  it('RXO → MedicationRequest (OMP and RDE without RXE); RXE → MedicationRequest', () => {
    const ordered = one<MedicationRequest>(
      bundleOf(msh('OMP^O09^OMP_O09'), PID, 'ORC|NW|RX1^EHR', 'RXO|860975^Metformin 500 MG^RXNORM|1||TAB^tablet|||||||90||3', 'RXR|PO^Oral^HL70162'),
      'MedicationRequest',
    );
    expect(ordered).toMatchObject({ status: 'active', intent: 'order', dispenseRequest: { numberOfRepeatsAllowed: 3, quantity: { value: 90 } } });
    expect(ordered.medicationCodeableConcept!.coding![0]).toMatchObject({ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '860975' });
    expect(ordered.dosageInstruction![0]!.route!.coding![0]!.code).toBe('PO');
    const encoded = all<MedicationRequest>(
      bundleOf(msh('RDE^O11^RDE_O11'), PID, 'ORC|NW|RX2^EHR', 'RXO|860975^Metformin^RXNORM|1', 'RXE||860975^Metformin ER^RXNORM|1||TAB||||90'),
      'MedicationRequest',
    );
    expect(encoded).toHaveLength(1);
    expect(encoded[0]!.medicationCodeableConcept!.coding![0]!.display).toBe('Metformin ER');
  });

  it('RXA → Immunization in VXU, MedicationAdministration elsewhere (RAS)', () => {
    const immunization = one<Immunization>(
      bundleOf(
        msh('VXU^V04^VXU_V04'),
        PID,
        'ORC|RE',
        'RXA|0|1|20250301||208^COVID-19 vaccine^CVX|0.3|mL^mL^UCUM||00||||||LOT9||PFR^Pfizer^MVX|||CP',
        'RXR|IM^Intramuscular^HL70162',
      ),
      'Immunization',
    );
    expect(immunization).toMatchObject({ status: 'completed', occurrenceDateTime: '2025-03-01', lotNumber: 'LOT9', primarySource: true });
    expect(immunization.vaccineCode.coding![0]).toMatchObject({ system: 'http://hl7.org/fhir/sid/cvx', code: '208' });
    expect(immunization.manufacturer!.identifier).toEqual({ system: 'http://hl7.org/fhir/sid/mvx', value: 'PFR' });
    const administration = one<MedicationAdministration>(
      bundleOf(msh('RAS^O17^RAS_O17'), PID, 'ORC|RE', 'RXA|0|1|202503011000|202503011010|313782^Acetaminophen 325 MG^RXNORM|2|TAB'),
      'MedicationAdministration',
    );
    expect(administration).toMatchObject({
      status: 'completed',
      effectivePeriod: { start: '2025-03-01T10:00:00-05:00', end: '2025-03-01T10:10:00-05:00' },
      dosage: { dose: { value: 2, unit: 'TAB' } },
    });
  });

  it('RXA → Immunization, RXE → MedicationRequest (VXU^V04, RDE^O11)', () => {
    const immunization = all<Immunization>(mapped(renderTemplate('vxu-v04')!.er7), 'Immunization')[0]!;
    expect(immunization).toMatchObject({ status: 'completed', primarySource: true, doseQuantity: { value: 0.5, code: 'mL' } });
    expect(immunization.vaccineCode.coding![0]!.system).toBe('http://hl7.org/fhir/sid/cvx');
    expect(immunization.route!.coding![0]!.code).toBe('IM');
    const prescription = all<MedicationRequest>(mapped(renderTemplate('rde-o11')!.er7), 'MedicationRequest')[0]!;
    expect(prescription.medicationCodeableConcept!.coding![0]).toMatchObject({
      system: 'http://www.nlm.nih.gov/research/umls/rxnorm',
      code: '860975',
    });
    expect(prescription.dispenseRequest).toMatchObject({ numberOfRepeatsAllowed: 3, quantity: { value: 90 } });
  });
});
