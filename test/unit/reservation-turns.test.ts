// The turns at the weekly allowance that `download --once` (and `archive --once`'s download step) hands out in claim
// order (src/downloads/once-claims.ts): with several transfers at once, the allowance goes to the files first in the
// priority order, whichever of them is quicker to reach its reservation.
import { describe, expect, it } from "vitest";
import { reservationTurns } from "../../src/downloads/once-claims.ts";

/** Whether `p` has settled once the pending callbacks have run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe(reservationTurns.name, () => {
  it("gives a turn only once every earlier one has passed, also when one in between passes early", async () => {
    const turn = reservationTurns();
    // A gallery original, a text (or an original that spends nothing) that passes without waiting, the next original.
    const [first, early, third] = [turn(), turn(), turn()];
    expect(await settled(first.wait())).toBe(true);
    early.pass();
    expect(await settled(third.wait()), "the third reserved before the first").toBe(false);
    first.pass();
    expect(await settled(third.wait())).toBe(true);
  });

  it("keeps claim order when each passes in its turn", async () => {
    const turn = reservationTurns();
    const turns = [turn(), turn(), turn()];
    const order: number[] = [];
    await Promise.all(
      [...turns.entries()].reverse().map(async ([i, t]) => {
        await t.wait();
        order.push(i);
        t.pass();
      }),
    );
    expect(order).toEqual([0, 1, 2]);
  });
});
