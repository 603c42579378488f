/**
 * One thread of the all-cores crypto measurement (`bench-micro.ts`, `allCoresCryptoUs`): signs and recovers
 * with the backend `workerData.backend` names for `workerData.ms` milliseconds, in step with the other
 * threads (every core busy at once, as the two nodes are at 64 in flight), and posts µs per sign + recover.
 */
import { randomBytes } from "node:crypto";
import { parentPort, workerData } from "node:worker_threads";

import { loadSecp256k1Backend, type Secp256k1BackendName } from "../channel-client/core/secp256k1";

const { backend: name, ms } = workerData as { backend: Secp256k1BackendName; ms: number };
const backend = loadSecp256k1Backend(name);
const key = randomBytes(32);
const digests = Array.from({ length: 256 }, () => randomBytes(32));
const signed = digests.map((digest) => backend.sign(digest, key));
for (let i = 0; i < 200; i++) backend.recover(digests[i % 256]!, signed[i % 256]!.signature, signed[i % 256]!.recovery);
let pairs = 0;
const started = performance.now();
while (performance.now() - started < ms) {
  for (let j = 0; j < 16; j++, pairs++) {
    const i = pairs % 256;
    backend.sign(digests[i]!, key);
    if (backend.recover(digests[i]!, signed[i]!.signature, signed[i]!.recovery) === undefined) throw new Error("a valid signature did not recover");
  }
}
parentPort!.postMessage(((performance.now() - started) * 1000) / pairs);
