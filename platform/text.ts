/**
 * `text` without the run of `character` at its end. A loop rather than `/x+$/`: that expression
 * restarts at every position of a long run that is not at the end, which is quadratic (a 64 KB
 * run of slashes followed by a letter cost seconds of CPU).
 */
export function trimTrailing(text: string, character: string): string {
  let end = text.length;
  while (end > 0 && text[end - 1] === character) end -= 1;
  return text.slice(0, end);
}

/**
 * A value echoed in an error message, cut to `max` characters: an answer that quotes what was
 * sent stays small (and a redirect's Location within what clients read) however long the value.
 */
export function excerpt(text: string, max = 120): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;
}
