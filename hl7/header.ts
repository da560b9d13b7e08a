/**
 * MSH read on its own, before (and without) parsing the message: enough to authenticate it and to
 * know how to acknowledge it. Costs a scan of the first segment only.
 */

export interface MshFields {
  /** MSH-n's first component, trimmed ('' when absent); MSH-1 is the field separator. */
  get(n: number): string;
  /** MSH-n exactly as sent. */
  raw(n: number): string;
}

/** Where the MSH segment starts and ends in `text`, or undefined when the text does not start with one. */
function mshBounds(text: string): { start: number; end: number } | undefined {
  let start = 0;
  while (start < text.length && (text.charCodeAt(start) === 0xfeff || /\s/.test(text.charAt(start)))) start++;
  if (!text.startsWith('MSH', start) || /[A-Za-z0-9\s]/.test(text.charAt(start + 3) || 'x')) return undefined;
  let end = start;
  while (end < text.length && text.charCodeAt(end) !== 0x0d && text.charCodeAt(end) !== 0x0a) end++;
  return { start, end };
}

export function readMsh(text: string): MshFields | undefined {
  const bounds = mshBounds(text);
  if (!bounds) return undefined;
  const line = text.slice(bounds.start, bounds.end);
  const separator = line.charAt(3);
  const component = line.charAt(4) || '^';
  // fields[0] is "MSH" and fields[1] is MSH-2, so MSH-n is fields[n - 1].
  const fields = line.split(separator);
  const raw = (n: number) => (n === 1 ? separator : (fields[n - 1] ?? ''));
  return { raw, get: (n) => raw(n).split(component)[0]!.trim() };
}

/**
 * The message with MSH-8 emptied: the credential it carried has done its work and must not reach
 * the mapping, the stored envelope or a log.
 */
export function withoutMsh8(text: string): string {
  const bounds = mshBounds(text);
  if (!bounds) return text;
  const line = text.slice(bounds.start, bounds.end);
  const fields = line.split(line.charAt(3));
  if ((fields[7] ?? '') === '') return text;
  fields[7] = '';
  return text.slice(0, bounds.start) + fields.join(line.charAt(3)) + text.slice(bounds.end);
}
