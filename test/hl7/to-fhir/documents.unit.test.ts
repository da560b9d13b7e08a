import type { DocumentReference } from 'fhir/r4';
import { describe, expect, it } from 'vitest';
import { renderTemplate } from '../../../hl7/templates';
import { all, bundleOf, mapped, msh, one, PID } from './messages';

/** hl7/to-fhir/documents.ts: TXA and its OBX content. */

describe('documents', () => {
  it('TXA → DocumentReference for any MDM trigger (T01 without content, T02 with)', () => {
    const document = one<DocumentReference>(
      bundleOf(
        msh('MDM^T01^MDM_T01'),
        'EVN|T01|20250301',
        PID,
        'PV1|1|O',
        'TXA|1|DS^Discharge summary|TX|202503011000|8888^Cedar^Gus|||||||DOC77^EHR|||||AU',
      ),
      'DocumentReference',
    );
    expect(document).toMatchObject({
      status: 'current',
      docStatus: 'final',
      masterIdentifier: { value: 'DOC77' },
      date: '2025-03-01T10:00:00-05:00',
    });
    expect(document.type!.coding![0]).toMatchObject({ system: 'http://terminology.hl7.org/CodeSystem/v2-0270', code: 'DS' });
  });

  it('TXA/OBX → DocumentReference with the text as its attachment (MDM^T02)', () => {
    const document = all<DocumentReference>(mapped(renderTemplate('mdm-t02')!.er7), 'DocumentReference')[0]!;
    expect(document.docStatus).toBe('final');
    const text = Buffer.from(document.content[0]!.attachment.data!, 'base64').toString('utf8');
    expect(text).toContain('SYNTHETIC RECORD');
  });
});
