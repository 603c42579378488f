/** Small assertion helpers for typed errors. */

/** Runs `fn` and returns the error it threw, failing the test if it threw nothing. */
export function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected the call to throw");
}

/** Awaits `promise` and returns the error it rejected with, failing the test if it resolved. */
export async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected the promise to reject");
}
