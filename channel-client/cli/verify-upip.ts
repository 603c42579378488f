/**
 * `ioi arbitrate --verify-upip`: the command around {@link verifyUpipRecord} (`arbitration/verify-upip.ts`).
 */
import { UsageError, type Out } from "./common";
import { bundleHash, type Bundle } from "../../arbitration/documents/bundle";
import { MAX_DOCUMENT_BYTES, parseDocument } from "../../arbitration/documents/document";
import { readBundleDirectory, readOptionFile } from "./input-file";
import { evidenceOfKind, parsePackage } from "../../arbitration/documents/package";
import type { UpipRecord } from "../../arbitration/documents/upip";
import { MAX_DIFFERENCES, MISMATCH_EXIT_CODE, UpipBundleNotFoundError, upipRecordsOf, verifyUpipRecord } from "../../arbitration/lanes/verify-upip";

export { differencesOf, MISMATCH_EXIT_CODE, UpipBundleNotFoundError, upipRecordsOf, verifyUpipRecord, type VerifyUpipParameters, type VerifyUpipReturnType } from "../../arbitration/lanes/verify-upip";

/*//////////////////////////////////////////////////////////////
                               COMMAND
//////////////////////////////////////////////////////////////*/

type Values = Record<string, unknown>;

/** Where the bundles come from: a package's evidence or two directories. */
function bundleSource(values: Values): (record: UpipRecord) => { suite: Bundle; deliverable: Bundle } {
  const packageFile = values.package as string | undefined;
  const suiteDir = values["suite-dir"] as string | undefined;
  const deliverableDir = values["deliverable-dir"] as string | undefined;
  if (packageFile !== undefined && (suiteDir !== undefined || deliverableDir !== undefined)) {
    throw new UsageError("Give either --package FILE or --suite-dir DIR with --deliverable-dir DIR, not both: they are two ways to supply the record's bundles.");
  }
  if (packageFile !== undefined) {
    const pkg = parsePackage(readOptionFile("package", packageFile, MAX_DOCUMENT_BYTES));
    const bundles = [...evidenceOfKind(pkg, "test_suite"), ...evidenceOfKind(pkg, "deliverable")].map((item) => item.content);
    const find = (hash: string, what: string) => {
      const bundle = bundles.find((candidate) => bundleHash(candidate) === hash);
      if (!bundle) throw new UpipBundleNotFoundError(`The package ${packageFile} holds no bundle hashing to ${hash}, the record's ${what}.`);
      return bundle;
    };
    return (record) => ({ suite: find(record.state.suite_hash, "test suite"), deliverable: find(record.state.deliverable_hash, "deliverable") });
  }
  if (suiteDir === undefined || deliverableDir === undefined) {
    throw new UsageError("--verify-upip needs the record's bundles: --package FILE, or --suite-dir DIR with --deliverable-dir DIR.");
  }
  const bundles = { suite: readBundleDirectory(suiteDir, "suite-dir"), deliverable: readBundleDirectory(deliverableDir, "deliverable-dir") };
  return () => bundles;
}

/** `ioi arbitrate --verify-upip FILE …`: sets exit status {@link MISMATCH_EXIT_CODE} when any record does not reproduce. */
export async function runVerifyUpip(values: Values, out: Out): Promise<void> {
  const file = values["verify-upip"] as string;
  if (file.length === 0) throw new UsageError("--verify-upip needs a file: a UPIP record or a Resolution.");
  const records = upipRecordsOf(parseDocument(readOptionFile("verify-upip", file, MAX_DOCUMENT_BYTES), { what: `--verify-upip ${file}` }));
  const bundlesFor = bundleSource(values);
  const results = [];
  for (const record of records) results.push(await verifyUpipRecord({ record, ...bundlesFor(record) }));

  const matched = results.filter((r) => r.match).length;
  results.forEach((r, i) => {
    const label = records.length === 1 ? "UPIP record" : `UPIP record ${i + 1} of ${records.length}`;
    const result = r.reproduced.result;
    const summary = `${result.failed_tests.length} of ${result.tests} tests failed${result.failed_tests.length ? ` (${result.failed_tests.join(", ")})` : ""}${result.suite_fault ? `, suite fault ${result.suite_fault}` : ""}`;
    if (r.match) {
      out.lines.push(`${label} ${r.original_hash}: match — reproduced bit for bit (${summary}).`);
    } else {
      const listed = r.differences.slice(0, MAX_DIFFERENCES).join(", ") + (r.differences.length > MAX_DIFFERENCES ? ", …" : "");
      out.lines.push(`${label} ${r.original_hash}: MISMATCH — the reproduction hashes to ${r.reproduced_hash}; differing fields: ${listed || "none (the record's stack hash is wrong)"} (reproduced: ${summary}).`);
    }
  });
  out.lines.push(matched === results.length ? `All ${results.length} record(s) reproduced: match.` : `${results.length - matched} of ${results.length} record(s) did not reproduce: mismatch.`);
  if (matched !== results.length) out.exitCode = MISMATCH_EXIT_CODE;
  Object.assign(out.result, {
    match: matched === results.length,
    records: results.map((r) => ({
      match: r.match,
      originalHash: r.original_hash,
      reproducedHash: r.reproduced_hash,
      differences: r.differences,
      failedTests: r.reproduced.result.failed_tests,
    })),
  });
}
