/**
 * The built-in worker of the demo: answers any request with the keccak of its params (deterministic, no
 * I/O; the WebAssembly keccak of the hot path, decision 0023). A real provider runs an MCP server instead (`ioi provider --worker CMD [ARGS…]`, decision 0022).
 */
import { canon } from "../core/canonical";
import { keccak256TextHex } from "../core/keccak";
import type { JsonObject } from "../core/validate";

export const echoHandler = async (request: JsonObject): Promise<{ result: JsonObject; units: bigint }> => ({
  result: { digest: keccak256TextHex(canon(request.params ?? null)) },
  units: 1n,
});
