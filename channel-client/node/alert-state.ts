/**
 * What a node's alerts and top-ups must not forget across a restart (issue 29 item 4): the alerts active when it
 * stopped (so a restart neither raises them again — no second log line, webhook or counter increment — nor
 * forgets to clear them) and the top-ups of the last day (so the daily cap still counts what was deposited before
 * the restart). One small JSON file beside the node's store, replaced atomically (`./atomic-file`).
 *
 * A top-up is recorded BEFORE its deposit is sent and taken back if the deposit fails: a crash between the two
 * can only under-spend the day's cap, never spend it twice.
 */
import { existsSync, readFileSync } from "node:fs";

import { BaseError } from "../core/errors";
import type { Alert, TopUpRecord } from "./alerts";
import { bigintReplacer, bigintReviver, writeFileAtomic } from "./atomic-file";

/** The state file is not this format (or not JSON): one sentence, not retryable. */
export class AlertStateError extends BaseError {
  override name = "AlertStateError" as const;
}

type Contents = { version: 1; alerts: Alert[]; topUps: Record<string, TopUpRecord[]> };

export class AlertState {
  /** Alerts active when last saved. */
  alerts: Alert[];
  /** Top-ups per asset (lower case), chain time and amount. */
  readonly topUps: Map<string, TopUpRecord[]>;

  private constructor(
    readonly file: string,
    contents: Contents,
  ) {
    this.alerts = contents.alerts;
    this.topUps = new Map(Object.entries(contents.topUps));
  }

  /** Reads `file`, or starts empty when it does not exist yet (it is written on the first change). */
  static open(file: string): AlertState {
    if (!existsSync(file)) return new AlertState(file, { version: 1, alerts: [], topUps: {} });
    let contents: Contents;
    try {
      contents = JSON.parse(readFileSync(file, "utf8"), bigintReviver) as Contents;
    } catch (cause) {
      throw new AlertStateError(`The alert state file ${file} is not readable JSON; move it away to start afresh.`, { cause });
    }
    if (contents?.version !== 1 || !Array.isArray(contents.alerts) || typeof contents.topUps !== "object" || contents.topUps === null) {
      throw new AlertStateError(`The alert state file ${file} is not an ioi alert state (version 1); move it away to start afresh.`);
    }
    return new AlertState(file, contents);
  }

  save(): void {
    const contents: Contents = { version: 1, alerts: this.alerts, topUps: Object.fromEntries(this.topUps) };
    writeFileAtomic(this.file, JSON.stringify(contents, bigintReplacer, 1));
  }
}
