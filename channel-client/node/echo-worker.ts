/**
 * The built-in worker of the demo: answers any request with the keccak of its params (deterministic, no
 * I/O; the WebAssembly keccak of the hot path, decision 0023). A real provider runs an MCP server instead (`ioi provider --worker CMD [ARGS…]`, decision 0022).
 */
import { canonBytes } from "../core/canonical";
import { keccak256Hex } from "../core/keccak";
import type { JsonObject } from "../core/validate";

export const echoHandler = async (request: JsonObject): Promise<{ result: JsonObject; units: bigint }> => ({
  result: { digest: keccak256Hex(canonBytes(request.params ?? null)) },
  units: 1n,
});
