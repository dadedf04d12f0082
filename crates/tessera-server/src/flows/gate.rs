//! The console's gate (D17.30, D17.43): a typed or scanned ticket checked in through exactly the
//! path `POST /tickets/verify` with `autoVerify` takes (`Store::gate_ticket`, then
//! `Store::check_in` through the group-committing writer), so a ticket is checked in once
//! whatever number of gates post it at once, with its audit entry, its `ticket.checked_in` event
//! and its live event. The answer is one of three words.
use crate::domain::tickets::TicketStatus;
use crate::store::audit::Audit;
use crate::store::tickets::{CheckIn, CheckinWriter, Ticket};
use crate::store::{Store, StoreError, StoreResult};

/// The gate's three answers (D17.43).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// This scan checked the ticket in.
    CheckedIn,
    /// An earlier scan did.
    Already,
    /// Unknown code, another account's ticket, a void ticket or an archived campaign.
    Invalid,
}

impl Verdict {
    /// The word the gate shows.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::CheckedIn => "Checked in",
            Verdict::Already => "Already checked in",
            Verdict::Invalid => "Invalid",
        }
    }

    /// The verdict element's class.
    pub fn class(self) -> &'static str {
        match self {
            Verdict::CheckedIn => "ok",
            Verdict::Already => "again",
            Verdict::Invalid => "bad",
        }
    }
}

/// What the gate answers, with the ticket when the code named one of the account's.
#[derive(Debug, Clone)]
pub struct GateAnswer {
    pub verdict: Verdict,
    /// Why an `Invalid` ticket is refused ("" otherwise).
    pub reason: &'static str,
    pub ticket: Option<Ticket>,
}

/// Who checks in at the console: the member's id for the audit entry and the identifier the
/// ticket keeps (`checkedInBy`).
pub struct Gatekeeper<'a> {
    pub member_id: &'a str,
    pub by: &'a str,
    pub request_id: Option<String>,
}

/// Checks in the ticket of `code` (a ticket code as `ticket_lookup_code` normalized it, or a
/// QR token) for `account_id`.
pub async fn check_in(
    store: &Store,
    writer: &CheckinWriter,
    account_id: &str,
    code: &str,
    who: Gatekeeper<'_>,
    now: i64,
) -> StoreResult<GateAnswer> {
    let gate = match store.gate_ticket(account_id, None, code).await {
        Ok(g) => g,
        Err(StoreError::NotFound(_)) => {
            return Ok(GateAnswer { verdict: Verdict::Invalid, reason: "No ticket has this code.", ticket: None })
        }
        Err(e) => return Err(e),
    };
    let summary = serde_json::json!({
        "campaignId": gate.ticket.campaign_id, "checkedInBy": who.by, "memberId": who.member_id, "via": "console",
    });
    let entry = Audit {
        key_id: None,
        request_id: who.request_id,
        action: "ticket.checked_in",
        entity_type: "ticket",
        entity_id: "",
        summary,
    };
    let answer = match store.check_in(writer, account_id, gate, who.by, now, entry).await? {
        CheckIn::CheckedIn(t) => GateAnswer { verdict: Verdict::CheckedIn, reason: "", ticket: Some(t) },
        CheckIn::Already(t) => GateAnswer { verdict: Verdict::Already, reason: "", ticket: Some(t) },
        CheckIn::Refused(g) => {
            let reason = if g.ticket.status == TicketStatus::Void {
                "This ticket is void."
            } else if g.campaign_archived {
                "This ticket's campaign is archived."
            } else {
                "This ticket cannot be checked in."
            };
            GateAnswer { verdict: Verdict::Invalid, reason, ticket: Some(g.ticket) }
        }
    };
    Ok(answer)
}
