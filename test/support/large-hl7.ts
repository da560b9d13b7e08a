import { MAX_MESSAGE_BYTES } from '../../hl7/parse';

/**
 * A synthetic ORU^R01 of exactly `bytes` (default the 256 KiB limit): one patient, one order and as
 * many numeric OBX results as fit, the last segment an NTE padded to the size; `mllpToken` goes in MSH-8.
 * Made up, no real patient.
 */
export function largeOruR01(options: { controlId: string; receiving?: [string, string]; bytes?: number; mllpToken?: string }): string {
  const bytes = options.bytes ?? MAX_MESSAGE_BYTES;
  const [application, facility] = options.receiving ?? ['SANDBOX', 'SYNTHETIC'];
  const head =
    `MSH|^~\\&|LAB|SYNTHETIC-HOSP|${application}|${facility}|20250101120000+0000|${options.mllpToken ?? ''}|ORU^R01^ORU_R01|${options.controlId}|P|2.5.1\r` +
    'PID|1||SYN-M1^^^SYNTHETIC-HOSP^MR||Synthetic^Jane||19800101|F\r' +
    'OBR|1||SYN-F1|58410-2^CBC panel^LN|||20250101120000\r';
  const segments = [head];
  let size = head.length;
  const pad = 'NTE|1||Synthetic padding\r';
  for (let index = 1; ; index++) {
    const obx = `OBX|${index}|NM|718-7^Hemoglobin^LN||13.${index % 10}|g/dL^g/dL^UCUM|12-16|N|||F\r`;
    if (size + obx.length + pad.length > bytes) break;
    segments.push(obx);
    size += obx.length;
  }
  segments.push(`NTE|1||Synthetic padding${'.'.repeat(bytes - size - pad.length)}\r`);
  return segments.join('');
}
