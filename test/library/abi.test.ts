/** The committed ABIs (`abi/*.ts`, shipped in the package) are exactly what the compiled contracts expose. */
import { expect } from "chai";
import { readFileSync } from "node:fs";
import path from "node:path";

import * as abi from "../../channel-client/abi";
import { ABI_CONTRACTS, abiModuleText, contractAbi, indexText } from "../../scripts/gen-abi";

const ROOT = path.join(__dirname, "..", "..");

describe("generated ABI modules", () => {
  for (const contract of ABI_CONTRACTS) {
    it(`abi/${contract.name}.ts matches artifacts/ (regenerate with \`npm run abi\`)`, () => {
      expect(readFileSync(path.join(ROOT, "channel-client", "abi", `${contract.name}.ts`), "utf8")).to.equal(abiModuleText(contract));
      const exported = (abi as Record<string, unknown>)[contract.constant];
      const artifact = JSON.parse(readFileSync(path.join(ROOT, "artifacts", "contracts", contract.source, `${contract.name}.json`), "utf8")) as { abi: unknown[] };
      // The artifact's ABI, plus the functions a contract serves from its fallback (GasEscrow: IGasEscrowWallets).
      expect(exported).to.deep.equal(contractAbi(contract));
      expect((exported as unknown[]).slice(0, artifact.abi.length)).to.deep.equal(artifact.abi);
    });
  }

  it("channel-client/abi/index.ts re-exports every one", () => {
    expect(readFileSync(path.join(ROOT, "channel-client", "abi", "index.ts"), "utf8")).to.equal(indexText());
  });
});
