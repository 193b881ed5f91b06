// A value as a printed command spells it for a POSIX shell: as it is when it holds nothing the shell reads, else in
// single quotes (a folder with a space, a quote or a $ in its name), so a command pasted from dvault's output runs.

const PLAIN = /^[\w@%+=:,./-]+$/;

export function shellWord(value: string): string {
  return PLAIN.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}
