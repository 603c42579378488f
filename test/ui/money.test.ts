/**
 * The page's money, without a chain (issue 28 item 10): amounts read in their asset's own unit, exactly, and
 * verdicts carry the CLI's names.
 */
import { expect } from "chai";
import { parseEther, parseGwei } from "viem";

import { FINAL_VERDICTS, VERDICT_CODES } from "../../arbitration/lanes/resolution";
import { formatAmountAdaptive } from "../../channel-client/core/format";
import { money, verdictName } from "../../channel-client/ui/money";

const LGAS = { symbol: "LGAS", decimals: 18 };

describe("issue 28 item 10: the page's amounts and verdict names", () => {
  it("shows ETH in wei, gwei or ETH by size, exactly, and tokens in their own unit", () => {
    const table: [bigint, string][] = [
      [0n, "0 wei"],
      [8000n, "8000 wei"],
      [999_999_999n, "999999999 wei"],
      [parseGwei("1"), "1 gwei"],
      [1_000_000_001n, "1.000000001 gwei"],
      [parseGwei("15"), "15 gwei"],
      [parseEther("0.0001"), "100000 gwei"],
      [parseEther("0.001"), "0.001 ETH"],
      [parseEther("0.123456789012345678"), "0.123456789012345678 ETH"],
      [parseEther("2"), "2 ETH"],
      [-8000n, "-8000 wei"],
      [-parseEther("0.5"), "-0.5 ETH"],
    ];
    for (const [amount, text] of table) expect(formatAmountAdaptive(amount), `${amount} wei`).to.equal(text);
    expect(formatAmountAdaptive(-parseEther("25"), LGAS)).to.equal("-25 LGAS");
    expect(formatAmountAdaptive(8000n, LGAS)).to.equal("0.000000000000008 LGAS");
    expect(money(-parseEther("25"), "0x0000000000000000000000000000000000000001", LGAS)).to.deep.equal({
      amount: (-parseEther("25")).toString(),
      asset: "0x0000000000000000000000000000000000000001",
      symbol: "LGAS",
      decimals: 18,
      text: "-25 LGAS",
    });
  });

  it("names every verdict code as the CLI does", () => {
    expect(verdictName(0)).to.equal("none");
    for (const name of FINAL_VERDICTS) expect(verdictName(VERDICT_CODES[name])).to.equal(name);
    expect(verdictName(1)).to.equal("provider_fault");
    expect(verdictName(2)).to.equal("challenger_fault");
  });
});
