/**
 * Lane 0's result and its recorder (split from arbitration/lanes/lane0.ts): every check is attributed to the party
 * that owes it (decision 0014) — evidence (the challenger), host (the arbitrator), respondent, challenger.
 */
import type { Lane0Check } from "./resolution";

type CheckStatus = Lane0Check["status"];

/** A provider violation that Lane 0 proved: decides the case for the challenger. */
export type Lane0Violation = {
  code: string;
  detail: string;
  refund: bigint;
  /** The receipt it concerns: refunds of one receipt's violations are not added up (at most its whole amount). */
  seq?: bigint;
  /** The SLA bond slash the session's terms attach to this kind of violation (v2 terms; 0 otherwise). */
  slash?: bigint;
};

export type Lane0Result = {
  checks: Lane0Check[];
  /**
   * Reason codes of every evidence or host check that did not pass (sorted, unique): non-empty means the
   * respondent's conduct was not judged. Each is also in `abstainCodes` or `challengerFaults`.
   */
  reasonCodes: string[];
  /** Codes of the arbitrator's own problems (sorted, unique): non-empty means it abstains (signs nothing). */
  abstainCodes: string[];
  /** Proven violations by the respondent, in check order. */
  violations: Lane0Violation[];
  /**
   * A session case's no-fault claim: the provider's verified fault statement for the challenged receipt (same
   * seq and request hash as the receipt proven into the root). `refund` = the receipt's metered amount less the
   * compute the statement declares spent, 0 if that is not positive. Violations take precedence (runner).
   */
  noFault: { seq: bigint; code: string; refund: bigint } | null;
  /**
   * Codes of what Lane 0 proved against the challenger (sorted, unique): evidence it owed and did not supply or
   * supplied invalid (`MISSING_CHANNEL`, `RECEIPT_SIGNATURE_INVALID`, …), or a case it should not have brought
   * (`DISPUTE_WINDOW_CLOSED`: opened after the terms' dispute window). Non-empty decides the case for the
   * respondent, whatever the receipts show (unless the arbitrator abstains).
   */
  challengerFaults: string[];
};

export class Checks {
  readonly checks: Lane0Check[] = [];
  readonly reasons = new Set<string>();
  readonly abstain = new Set<string>();
  readonly violations: Lane0Violation[] = [];
  noFault: Lane0Result["noFault"] = null;
  readonly challengerFaults = new Set<string>();

  /**
   * Records a check of evidence the challenger owes (it built and committed the package): evidence missing or
   * invalid is proven against the challenger with `reason`, and the respondent's conduct is not judged.
   */
  evidence(name: string, reason: string, ok: boolean | "missing", detail: string | null = null): boolean {
    const status: CheckStatus = ok === "missing" ? "missing" : ok ? "pass" : "fail";
    this.checks.push({ name, status, detail: status === "pass" ? null : detail });
    if (status !== "pass") {
      this.reasons.add(reason);
      this.challengerFaults.add(reason);
    }
    return status === "pass";
  }

  /**
   * Records a check of the arbitrator's own inputs (the package it was handed, the case's status, what it read
   * from the chain): a failure makes it abstain with `reason`. Recorded only when it fails, so a run that
   * passes keeps the bytes it had before these checks were split out (`package_hash` keeps its place: `ok`
   * records it whatever the outcome).
   */
  host(name: string, reason: string, ok: boolean, detail: string, always = false): boolean {
    if (ok && !always) return true;
    this.checks.push({ name, status: ok ? "pass" : "fail", detail: ok ? null : detail });
    if (!ok) {
      this.reasons.add(reason);
      this.abstain.add(reason);
    }
    return ok;
  }

  /** Records a check of the respondent's conduct: a failure is a proven violation. */
  respondent(name: string, ok: boolean, violation: Lane0Violation): boolean {
    this.checks.push({ name, status: ok ? "pass" : "fail", detail: ok ? null : violation.detail });
    if (!ok) this.violations.push(violation);
    return ok;
  }

  /** Records a check of the challenger's case: a failure proves the case should not have been brought. */
  challenger(name: string, ok: boolean, code: string, detail: string): boolean {
    this.checks.push({ name, status: ok ? "pass" : "fail", detail: ok ? null : detail });
    if (!ok) this.challengerFaults.add(code);
    return ok;
  }

  result(): Lane0Result {
    return {
      checks: this.checks,
      reasonCodes: [...this.reasons].sort(),
      abstainCodes: [...this.abstain].sort(),
      violations: this.violations,
      noFault: this.noFault,
      challengerFaults: [...this.challengerFaults].sort(),
    };
  }
}


export async function signatureCheck(c: Checks, name: string, reason: string, verify: () => Promise<void>): Promise<void> {
  try {
    await verify();
    c.evidence(name, reason, true);
  } catch (error) {
    c.evidence(name, reason, false, error instanceof Error ? (error as { shortMessage?: string }).shortMessage ?? error.message : String(error));
  }
}
