/** Assertions on contract reverts, by custom error name and arguments. */
import { expect } from "chai";
import {
  BaseError,
  ContractFunctionExecutionError,
  ContractFunctionRevertedError,
  decodeErrorResult,
  isHex,
  parseAbi,
  type Abi,
  type Hex,
} from "viem";

/** Errors that solady raises from assembly, so they are in no contract's ABI. */
export const LIBRARY_ERRORS = parseAbi(["error TransferFromFailed()", "error TransferFailed()", "error Reentrancy()"]);

/** The raw revert data somewhere in `error`'s cause chain (Hardhat puts it on its innermost error). */
export function rawRevertData(error: unknown): Hex | undefined {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e instanceof ContractFunctionRevertedError && e.raw) return e.raw;
    const { data } = e as { data?: unknown };
    if (typeof data === "string" && isHex(data)) return data;
    // Some Hardhat errors nest the data one level deeper ({ data: { data: "0x…" } }).
    const nested = (data as { data?: unknown } | undefined)?.data;
    if (typeof nested === "string" && isHex(nested)) return nested;
  }
  return undefined;
}

/**
 * Awaits a contract call (or deployment) that must revert with the custom error `errorName` (and exactly
 * `args`, if given). viem decodes the error itself when the node reports it as a revert
 * (`ContractFunctionRevertedError`); Hardhat reports it as an RPC error carrying the raw data, which is
 * decoded here with the call's ABI plus `extraAbi` (errors of a contract the call reaches, or the ABI of a
 * deployment, which viem does not attach).
 */
export async function expectRevert(
  promise: Promise<unknown>,
  errorName: string,
  args?: readonly unknown[],
  extraAbi: Abi = [],
): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e ?? new Error("rejected without a reason"),
  );
  if (error === undefined) expect.fail(`expected a revert with ${errorName}, but the call succeeded`);
  expect(error, String(error)).to.be.instanceOf(BaseError);
  const base = error as BaseError;
  const reverted = base.walk((e) => e instanceof ContractFunctionRevertedError && e.data !== undefined);
  let decoded = reverted instanceof ContractFunctionRevertedError ? reverted.data : undefined;
  if (decoded === undefined) {
    const data = rawRevertData(base);
    if (data === undefined || data === "0x") expect.fail(`no revert data in: ${base.shortMessage}`);
    const callAbi = base instanceof ContractFunctionExecutionError ? (base.abi as Abi) : [];
    decoded = decodeErrorResult({ abi: [...callAbi, ...LIBRARY_ERRORS, ...extraAbi], data });
  }
  expect(decoded.errorName, base.shortMessage).to.equal(errorName);
  if (args !== undefined) expect(decoded.args ?? []).to.deep.equal(args);
}
