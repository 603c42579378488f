import { subtask } from "hardhat/config";
import { TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD } from "hardhat/builtin-tasks/task-names";
import type { HardhatUserConfig } from "hardhat/config";
import "@nomicfoundation/hardhat-toolbox-viem";

/** The one compiler version this project uses; it ships as WebAssembly in the `solc` package. */
const SOLC_VERSION = "0.8.28";

// Hardhat 2 downloads compilers from the internet by default, which this project must not need.
// Resolve the pinned version to the solc-js build in node_modules and refuse any other version.
subtask(TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD, async (args: { solcVersion: string }) => {
  if (args.solcVersion !== SOLC_VERSION) {
    throw new Error(
      `Only solc ${SOLC_VERSION} is available offline (from the "solc" package); a contract asked for ${args.solcVersion}.`,
    );
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const solc = require("solc") as { version(): string };
  return {
    compilerPath: require.resolve("solc/soljson.js"),
    isSolcJs: true,
    version: SOLC_VERSION,
    longVersion: solc.version(),
  };
});

const rpcUrl = process.env.IOI_RPC_URL;
const deployerKey = process.env.IOI_DEPLOYER_KEY;

const config: HardhatUserConfig = {
  solidity: {
    compilers: [{ version: SOLC_VERSION, settings: { evmVersion: "cancun", optimizer: { enabled: true, runs: 10_000 } } }],
    // The DisputeManager runs rarely and is large: optimised for size so it stays under the 24 KiB code limit.
    overrides: Object.fromEntries(
      ["contracts/DisputeManager.sol", "contracts/libraries/DisputeRules.sol", "contracts/libraries/Panels.sol"].map((file) => [
        file,
        { version: SOLC_VERSION, settings: { evmVersion: "cancun", viaIR: true, optimizer: { enabled: true, runs: 1 } } },
      ]),
    ),
  },
  networks: {
    // 40 funded accounts: the dispute tests and the devnet draw panels from up to 16 admitted arbitrators.
    // IOI_DEVNET_CHAIN_ID serves a second devnet under another chain id (test/channel-client/two-chains.test.ts).
    hardhat: {
      accounts: { count: 40 },
      ...(process.env.IOI_DEVNET_CHAIN_ID ? { chainId: Number(process.env.IOI_DEVNET_CHAIN_ID) } : {}),
      // `npm run coverage`: instrumented contracts are several times larger and costlier to deploy than
      // Osaka's per-transaction gas cap (EIP-7825, 2^24) and the contract size limit allow.
      ...(process.env.SOLIDITY_COVERAGE === "true" ? { allowUnlimitedContractSize: true, blockGasLimit: 1_000_000_000, hardfork: "prague" } : {}),
    },
    localhost: { url: `http://127.0.0.1:${process.env.IOI_DEVNET_PORT ?? 8545}` },
    ...(rpcUrl
      ? { remote: { url: rpcUrl, accounts: deployerKey ? [deployerKey] : [] } }
      : {}),
  },
  // Contract verification (@nomicfoundation/hardhat-verify, loaded by the toolbox): `scripts/verify.ts`
  // verifies a whole deployment, `npx hardhat verify --network remote ADDRESS ARGS…` one contract. Etherscan's
  // API key (IOI_EXPLORER_API_KEY) serves every chain it indexes; another Etherscan-compatible explorer (a
  // Blockscout) is named by IOI_EXPLORER_API_URL and IOI_EXPLORER_URL for the chain IOI_EXPLORER_CHAIN_ID.
  // Sourcify stays off: this project makes no network call it is not asked to.
  etherscan: {
    apiKey: process.env.IOI_EXPLORER_API_KEY ?? "",
    customChains: process.env.IOI_EXPLORER_API_URL
      ? [
          {
            network: "remote",
            chainId: Number(process.env.IOI_EXPLORER_CHAIN_ID ?? 0),
            urls: { apiURL: process.env.IOI_EXPLORER_API_URL, browserURL: process.env.IOI_EXPLORER_URL ?? process.env.IOI_EXPLORER_API_URL },
          },
        ]
      : [],
  },
  sourcify: { enabled: false },
  gasReporter: {
    enabled: process.env.REPORT_GAS === "true",
    offline: true,
  },
  mocha: {
    timeout: 120_000,
  },
};

export default config;
