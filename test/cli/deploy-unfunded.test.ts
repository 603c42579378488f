/**
 * Issue 28 item 9: deploying with an unfunded key says so in one sentence before sending anything, instead of
 * the node's "Missing or invalid parameters." and the contract's bytecode.
 */
import { expect } from "chai";
import hre from "hardhat";

import { deployAll } from "../../scripts/deploy";

describe("issue 28 item 9: a deployment from an unfunded key", function () {
  it("refuses with one sentence naming the deployer and the chain, and sends no transaction", async () => {
    const [deployer] = await hre.viem.getWalletClients();
    const publicClient = await hre.viem.getPublicClient();
    const address = deployer!.account.address;
    const snapshot = (await hre.network.provider.send("evm_snapshot", [])) as string;
    try {
      await hre.network.provider.send("hardhat_setBalance", [address, "0x0"]);
      const nonce = await publicClient.getTransactionCount({ address });
      const error = await deployAll(hre).then(
        () => expect.fail("the deployment went ahead without ETH"),
        (e: unknown) => e as Error,
      );
      expect(error.message).to.match(/^The deployer 0x[0-9a-fA-F]{40} holds no ETH on chain 31337; fund it before deploying \(every contract creation pays gas\)\.$/);
      expect(await publicClient.getTransactionCount({ address })).to.equal(nonce);
    } finally {
      await hre.network.provider.send("evm_revert", [snapshot]);
    }
  });
});
