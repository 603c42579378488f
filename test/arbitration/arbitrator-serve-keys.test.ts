/**
 * `ioi arbitrator serve` with several keys (decision 0031 amendment): careless combinations are one sentence and
 * exit 2, before any RPC call (the RPC here is a closed port, never reached).
 */
import { expect } from "chai";

import { runCli } from "../helpers/cli";

const K1 = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const K2 = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
const NO_NODE = ["--rpc", "http://127.0.0.1:9", "--dispute-manager", "0x5FbDB2315678afecb367f032d93F642f64180aa3"];

describe("ioi arbitrator serve --key-env A,B: one daemon per key, careless combinations refused", () => {
  const cases: [name: string, argv: string[], sentence: string][] = [
    ["--state with two keys", ["--key-env", "K1,K2", "--state", "one.json"], "--state names one file, and 2 keys are served; give --state-dir DIR (one state file per key inside it)."],
    ["both --state and --state-dir", ["--key-env", "K1", "--state", "a.json", "--state-dir", "d"], "Pass either --state FILE or --state-dir DIR, not both."],
    ["one key listed twice", ["--key-env", "K1,K1", "--state-dir", "d"], "is listed twice; one daemon serves each key once."],
    ["an empty name", ["--key-env", "K1,,K2", "--state-dir", "d"], "--key-env lists an empty name; give names separated by commas, such as A,B,C."],
    ["an unset variable", ["--key-env", "K1,K3", "--state-dir", "d"], "Set K3 to the acting party's private key"],
    ["neither --state nor --state-dir", ["--key-env", "K1"], "--state is required"],
  ];
  for (const [name, argv, sentence] of cases) {
    it(`refuses ${name}`, async () => {
      const { code, err } = await runCli(["arbitrator", "serve", "--once", ...argv, ...NO_NODE], { K1, K2, IOI_PRIVATE_KEY: undefined });
      expect(code, err).to.equal(2);
      expect(err.split("\n")[0]).to.contain(sentence);
      expect(err).not.to.contain("    at ");
    });
  }
});
