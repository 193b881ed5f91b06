// One read for every caller that asks the same question while it runs: a burst of requests for the archive
// shares one count of its months and one list of its folders instead of each running its own (issue 27, row 4).
// Nothing is kept once the read ends, so a caller never gets an answer older than the read it joined: as fresh
// as if it had arrived a moment earlier, and the next caller after it asks again.
export function singleFlight<A, T>(keyOf: (arg: A) => string, read: (arg: A) => Promise<T>): (arg: A) => Promise<T> {
  const running = new Map<string, Promise<T>>();
  return (arg) => {
    const key = keyOf(arg);
    const joined = running.get(key);
    if (joined) return joined;
    const started = read(arg).finally(() => running.delete(key));
    running.set(key, started);
    return started;
  };
}
