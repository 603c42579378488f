/** A role function with the parameters its deployment and clients fix (`K`) already supplied. */
export type Bound<F extends (parameters: any) => unknown, K extends PropertyKey> = (parameters: Omit<Parameters<F>[0], K>) => ReturnType<F>;

/** Binds the parameters a deployment and a pair of viem clients fix, so a role's functions take only the rest. */
export function bindParameters<Fixed extends object>(fixed: Fixed) {
  return <P extends Fixed, R>(fn: (parameters: P) => R) =>
    (parameters: Omit<P, keyof Fixed>): R =>
      fn({ ...fixed, ...parameters } as unknown as P);
}
