/**
 * The published JSON Schemas (issue 13): each compiles under Ajv's strict mode, every example document in
 * the repository validates against its schema and is accepted by the TypeScript parser of that document,
 * and a schema violation reads as one sentence naming the field.
 */
import Ajv from "ajv";
import { expect } from "chai";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

import { icsFromJson } from "../../arbitration/documents/ics";
import { packageFromJson } from "../../arbitration/documents/package";
import { resolutionFromJson } from "../../arbitration/lanes/resolution";
import { upipFromJson } from "../../arbitration/documents/upip";
import { packetFromJson } from "../../channel-client/core/packets";
import { assertMatchesSchema, jsonSchemaOf, schemaValidator, SCHEMA_NAMES, type SchemaName } from "../../channel-client/core/schemas";
import { pricingTermsFromJson } from "../../channel-client/core/terms";
import { progressProofFromJson, signedProgressProofFromJson, trancheRequestFromJson } from "../../channel-client/core/progress-proof";
import { thrown } from "../helpers/assert";

const ROOT = path.join(__dirname, "..", "..");
/** Folders that hold no documents of ours (dependencies, build output, tool state, compiler artifacts). */
const SKIP = new Set(["node_modules", "dist", "artifacts", "cache", "coverage", ".git", ".cache", ".data", "typechain-types", "ignition"]);
/** JSON files that are configuration or tool output, not protocol documents. */
const NOT_DOCUMENTS = /^(package(-lock)?|tsconfig(\.build)?|\.solhint|gas-report|results|socket|localhost|hardhat|mcp-servers|chain-\d+|protocol-vectors)\.json$|^bench\//;

/** Which schema an example document follows, from its file name. */
function schemaOfFile(name: string): SchemaName | undefined {
  if (name === "terms.json" || name.endsWith(".terms.json")) return "terms";
  if (/^packet(-[a-z0-9-]+)?\.json$/.test(name)) return "packet";
  if (name === "ics.json" || name.endsWith(".ics.json")) return "ics";
  if (name === "challenge-package.json" || name === "case.json") return "challenge-package";
  if (name === "resolution.json") return "resolution";
  if (name === "upip.json") return "upip";
  if (name === "progress-proof.json" || name.endsWith(".progress-proof.json")) return "progress-proof";
  return undefined;
}

const PARSERS: Record<SchemaName, (value: unknown) => unknown> = {
  terms: (v) => pricingTermsFromJson(v),
  packet: (v) => packetFromJson(v),
  ics: (v) => icsFromJson(v),
  "challenge-package": (v) => packageFromJson(v),
  resolution: (v) => resolutionFromJson(v),
  upip: (v) => upipFromJson(v),
  "progress-proof": (v) =>
    typeof v === "object" && v !== null && "signature" in v ? signedProgressProofFromJson(v) : typeof v === "object" && v !== null && "sampleCommit" in v ? trancheRequestFromJson(v) : progressProofFromJson(v),
};

function jsonFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir)) {
    if (SKIP.has(entry)) continue;
    const file = path.join(dir, entry);
    if (statSync(file).isDirectory()) jsonFiles(file, out);
    else if (entry.endsWith(".json") && !path.relative(ROOT, file).startsWith("schemas")) out.push(file);
  }
  return out;
}

describe("JSON Schemas of the documents third parties produce and check", () => {
  it("are published for terms, packets, ChallengePackage, ICS, Resolution and UPIP records, and compile in strict mode", () => {
    expect(SCHEMA_NAMES).to.have.members(["terms", "packet", "ics", "challenge-package", "resolution", "upip", "progress-proof"]);
    for (const name of SCHEMA_NAMES) {
      const schema = jsonSchemaOf(name);
      expect(schema.$schema, name).to.equal("http://json-schema.org/draft-07/schema#");
      expect(schema.$id, name).to.equal(`https://ioi-settlement.invalid/schemas/${name}.schema.json`);
      expect(() => new Ajv({ strict: true, allowUnionTypes: true }).compile(schema), name).to.not.throw();
    }
  });

  it("every example document in the repository validates against its schema and parses", () => {
    const files = jsonFiles(ROOT).filter((f) => !NOT_DOCUMENTS.test(path.basename(f)) && !NOT_DOCUMENTS.test(path.relative(ROOT, f)));
    const covered = new Set<SchemaName>();
    for (const file of files) {
      const name = schemaOfFile(path.basename(file));
      expect(name, `${path.relative(ROOT, file)} follows no published schema: name it after one, or list it as configuration`).to.not.equal(undefined);
      const document = JSON.parse(readFileSync(file, "utf8")) as unknown;
      const validate = schemaValidator(name!);
      expect(validate(document), `${path.relative(ROOT, file)}: ${JSON.stringify(validate.errors)}`).to.equal(true);
      expect(() => PARSERS[name!](document), path.relative(ROOT, file)).to.not.throw();
      covered.add(name!);
    }
    // One example of each document at least: the README's hand-run sections and the library use them.
    expect([...covered]).to.have.members([...SCHEMA_NAMES]);
  });

  it("the resolution's replays are UPIP records, the package's ICS evidence is an ICS", () => {
    const resolution = JSON.parse(readFileSync(path.join(ROOT, "examples", "documents", "resolution.json"), "utf8")) as { replays: unknown[] };
    expect(resolution.replays.length).to.be.greaterThan(0);
    for (const replay of resolution.replays) expect(schemaValidator("upip")(replay)).to.equal(true);
    const pkg = JSON.parse(readFileSync(path.join(ROOT, "examples", "documents", "challenge-package.json"), "utf8")) as { evidence: { kind: string; content: unknown }[] };
    expect(schemaValidator("ics")(pkg.evidence.find((e) => e.kind === "ics")!.content)).to.equal(true);
  });

  it("the Resolution schema's UPIP record is the UPIP schema itself (one definition, copied so each schema stands alone)", () => {
    const { $schema: _s, $id: _i, title: _t, description: _d, definitions, ...upip } = jsonSchemaOf("upip") as Record<string, any>;
    const resolution = jsonSchemaOf("resolution") as { definitions: Record<string, unknown> };
    expect(resolution.definitions.upip).to.deep.equal(upip);
    expect(resolution.definitions.upipInputs).to.deep.equal(definitions.upipInputs);
  });

  describe("a violation is one sentence naming the field", () => {
    const terms = () => JSON.parse(readFileSync(path.join(ROOT, "examples", "documents", "terms.json"), "utf8")) as Record<string, unknown>;
    const invoke = () => JSON.parse(readFileSync(path.join(ROOT, "examples", "documents", "packet-invoke.json"), "utf8")) as Record<string, any>;
    const cases: Array<[string, SchemaName, () => unknown, string, string]> = [
      ["an amount as a JSON number", "terms", () => ({ ...terms(), pricePerInvocation: 1000 }), "AmountAsNumberError", "PricingTerms.pricePerInvocation is the JSON number 1000"],
      ["a field the schema does not define", "terms", () => ({ ...terms(), discount: "1" }), "UnknownFieldError", "PricingTerms.discount is not a field"],
      ["a missing field", "terms", () => ({ version: "1", unit: "invocation" }), "InvalidFieldError", "PricingTerms.pricePerInvocation must be present"],
      ["another unit", "terms", () => ({ ...terms(), unit: "token" }), "InvalidFieldError", 'PricingTerms.unit must be "invocation"'],
      ["an uppercase hash in a ticket", "packet", () => { const p = invoke(); p.payload.ticket.ticket.termsHash = p.payload.ticket.ticket.termsHash.toUpperCase().replace("0X", "0x"); return p; }, "InvalidFieldError", "packet.payload.ticket.ticket.termsHash must be a 32-byte hash"],
      ["a field of another packet type", "packet", () => ({ ...invoke(), action_result_id: "r" }), "InvalidFieldError", "packet.action_result_id must be absent"],
      ["a seq as a number", "packet", () => { const p = invoke(); p.payload.ticket.ticket.seq = 1; return p; }, "AmountAsNumberError", "packet.payload.ticket.ticket.seq is the JSON number 1"],
    ];
    for (const [label, schema, make, errorName, message] of cases) {
      it(label, () => {
        const error = thrown(() => assertMatchesSchema(schema, make(), schema === "terms" ? "PricingTerms" : "packet"));
        expect(error.name).to.equal(errorName);
        expect(error.message).to.contain(message);
        expect(error.message.split("\n")).to.have.length(1);
      });
    }
  });
});
