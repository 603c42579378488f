/**
 * Child process for the store's crash test: opens the store, then writes steps as fast as it can (many
 * in flight, so they group-commit) and prints the seq of every write whose promise RESOLVED, one per line.
 * The test SIGKILLs it at a random moment and checks that every printed seq survived.
 *
 *   node -r ts-node/register/transpile-only test/helpers/store-writer.ts <db-path> <template.json>
 *
 * `template.json` holds a really signed step ({ sessionId, ticket, receipt } in their JSON forms); the
 * writer varies only its seq (and the amounts that depend on it). The store checks artifacts' form, not
 * their signatures, so every row it writes is valid per the artifacts' `...FromJson`. Writing resumes
 * after the highest stored seq, so the same database can be crashed repeatedly.
 */
import { readFileSync } from "node:fs";
import type { Hex } from "viem";

import { receiptLeaf } from "../../channel-client/core/leaf";
import {
  signedSessionReceiptFromJson,
  signedSessionReceiptToJson,
  type SignedSessionReceiptJson,
} from "../../channel-client/core/receipt";
import {
  signedPaymentTicketFromJson,
  signedPaymentTicketToJson,
  type SignedPaymentTicketJson,
} from "../../channel-client/core/ticket";
import { SqliteStore } from "../../channel-client/store/sqlite-store";
import type { StepRecord } from "../../channel-client/store/store";

/** Price per invocation the varied steps charge: ticket `n` authorises `n × STEP_PRICE`. */
export const STEP_PRICE = 10n ** 18n;

export type StepTemplateJson = { sessionId: Hex; ticket: SignedPaymentTicketJson; receipt: SignedSessionReceiptJson };

export function stepTemplateToJson(sessionId: Hex, step: Required<StepRecord>): StepTemplateJson {
  return {
    sessionId,
    ticket: signedPaymentTicketToJson(step.ticket),
    receipt: signedSessionReceiptToJson(step.receipt),
  };
}

/** `template` with seq `seq`: same signatures, seq-dependent fields and leaf recomputed. */
export function stepWithSeq(template: Required<StepRecord>, seq: bigint): Required<StepRecord> {
  const ticket = { ...template.ticket, ticket: { ...template.ticket.ticket, seq, cumulativeAmount: seq * STEP_PRICE } };
  const receipt = {
    ...template.receipt,
    receipt: { ...template.receipt.receipt, seq, metering: { units: seq, amount: STEP_PRICE } },
  };
  return { seq, ticket, receipt, leaf: receiptLeaf(receipt.receipt, ticket.ticket) };
}

/**
 * How many writes the child keeps in flight. Below the store's batch limit, so batches are cut by the
 * store's macrotask timer (the ordinary path) and each holds a few hundred writes.
 */
const IN_FLIGHT = 500;

function main(): void {
  const [dbPath, templatePath] = process.argv.slice(2);
  if (!dbPath || !templatePath) {
    process.stderr.write("usage: store-writer <db-path> <template.json>\n");
    process.exit(2);
  }
  const json = JSON.parse(readFileSync(templatePath, "utf8")) as StepTemplateJson;
  const ticket = signedPaymentTicketFromJson(json.ticket);
  const receipt = signedSessionReceiptFromJson(json.receipt);
  const template: Required<StepRecord> = { seq: ticket.ticket.seq, ticket, receipt, leaf: receiptLeaf(receipt.receipt, ticket.ticket) };
  const store = SqliteStore.open(dbPath);
  let next = (store.latestTicket(json.sessionId)?.ticket.seq ?? 0n) + 1n;
  let inFlight = 0;
  let acknowledged: bigint[] = [];
  // One stdout write per batch: the reactions of a batch's promises all run before this microtask.
  const printAcknowledged = (): void => {
    // A pipe write on Linux is synchronous: once it returns, the parent can read the lines even if this
    // process is killed right after.
    process.stdout.write(acknowledged.map((seq) => `${seq}\n`).join(""));
    acknowledged = [];
  };
  const pump = (): void => {
    while (inFlight < IN_FLIGHT) {
      const seq = next++;
      inFlight++;
      store.putStep(json.sessionId, stepWithSeq(template, seq)).then(
        () => {
          if (acknowledged.length === 0) queueMicrotask(printAcknowledged);
          acknowledged.push(seq);
          inFlight--;
          pump();
        },
        (error: unknown) => {
          process.stderr.write(`write of seq ${seq} failed: ${String(error)}\n`);
          process.exit(1);
        },
      );
    }
  };
  pump();
}

if (require.main === module) main();
