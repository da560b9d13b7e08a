/**
 * Given names and the short forms people register under, one group per line: a curated list,
 * because no well-kept npm package carries one. Two names in one group compare as `nickname`.
 */
const GROUPS: readonly (readonly string[])[] = [
  ['william', 'will', 'bill', 'billy', 'willie', 'liam'],
  ['robert', 'rob', 'bob', 'bobby', 'robbie', 'bert'],
  ['richard', 'rich', 'rick', 'ricky', 'dick'],
  ['james', 'jim', 'jimmy', 'jamie'],
  ['john', 'jack', 'johnny', 'jon'],
  ['joseph', 'joe', 'joey'],
  ['michael', 'mike', 'mikey', 'mick'],
  ['thomas', 'tom', 'tommy'],
  ['christopher', 'chris', 'kit'],
  ['daniel', 'dan', 'danny'],
  ['edward', 'ed', 'eddie', 'ted', 'ned'],
  ['charles', 'charlie', 'chuck', 'chas'],
  ['anthony', 'tony'],
  ['benjamin', 'ben', 'benny', 'benji'],
  ['alexander', 'alexandre', 'alex', 'sandy', 'xander'],
  ['nathaniel', 'nathan', 'nate', 'nat'],
  ['peter', 'pete'],
  ['samuel', 'sam', 'sammy'],
  ['nicholas', 'nick', 'nicky'],
  ['matthew', 'matt'],
  ['andrew', 'andy', 'drew'],
  ['elizabeth', 'liz', 'beth', 'betty', 'eliza', 'libby', 'lizzie'],
  ['margaret', 'maggie', 'peggy', 'meg', 'margie'],
  ['katherine', 'catherine', 'kate', 'kathy', 'katie', 'cathy'],
  ['patricia', 'pat', 'patti', 'patty', 'trish'],
  ['rebecca', 'rebekah', 'becky', 'becca'],
  ['jacquelyn', 'jacqueline', 'jackie'],
  ['susan', 'sue', 'suzie'],
  ['deborah', 'debra', 'deb', 'debbie'],
  ['jennifer', 'jen', 'jenny'],
  ['dorothy', 'dot', 'dottie'],
  ['cristina', 'christina', 'tina', 'chris'],
];

const groupsOf = new Map<string, Set<number>>();
GROUPS.forEach((group, index) => {
  for (const name of group) {
    const groups = groupsOf.get(name) ?? new Set<number>();
    groups.add(index);
    groupsOf.set(name, groups);
  }
});

/** Whether two normalized given names are forms of one another (`william` and `bill`). */
export function areNicknames(a: string, b: string): boolean {
  if (a === b) return false;
  const left = groupsOf.get(a);
  const right = groupsOf.get(b);
  if (!left || !right) return false;
  for (const group of left) if (right.has(group)) return true;
  return false;
}
