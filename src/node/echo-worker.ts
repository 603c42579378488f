/**
 * The built-in worker of the demo: answers any request with the keccak of its params (deterministic, no
 * I/O). A real provider runs an MCP server instead (`ioi provider --worker CMD [ARGS…]`, decision 0022).
 */
import { keccak256, stringToBytes } from "viem";

import { canon } from "../core/canonical";
import type { JsonObject } from "../core/validate";

export const echoHandler = async (request: JsonObject): Promise<{ result: JsonObject; units: bigint }> => ({
  result: { digest: keccak256(stringToBytes(canon(request.params ?? null))) },
  units: 1n,
});
