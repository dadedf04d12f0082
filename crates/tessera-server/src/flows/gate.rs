//! The gate (D7.3, D17.30, D17.43): a ticket checked in exactly once, whether `POST
//! /tickets/verify` with `autoVerify` or the console's gate asks, and whatever number of gates
//! post it at once. Check-ins arriving together share one transaction (group commit, started by
//! [`checkin_writer`]): the conditional update, the audit entries and the live events
//! (`store::tickets::check_in_batch`), and here each winner's `ticket.checked_in` event (the
//! ticket as the API shows it, D17.26); each caller is answered once its own is committed.
//! The console's answer is one of three words.
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

use crate::domain::tickets::TicketStatus;
use crate::domain::webhooks::EventType;
use crate::store::audit::Audit;
use crate::store::group_commit::GroupCommit;
use crate::store::tickets::{self, CheckIn, CheckInRequest, CheckinWriter, GateTicket, Ticket};
use crate::store::{events, Store, StoreError, StoreResult};

/// Starts the group-committing writer of check-ins.
pub fn checkin_writer(store: Store) -> CheckinWriter {
    GroupCommit::start(store, write_batch)
}

fn write_batch<'a>(
    store: &'a Store,
    requests: &'a [CheckInRequest],
) -> Pin<Box<dyn Future<Output = StoreResult<Vec<bool>>> + Send + 'a>> {
    Box::pin(check_in_batch(store, requests))
}

/// One batch of check-ins in one transaction, each winner with its `ticket.checked_in` event.
async fn check_in_batch(store: &Store, requests: &[CheckInRequest]) -> StoreResult<Vec<bool>> {
    let mut tx = store.begin().await?;
    let batch = tickets::check_in_batch(&mut tx, requests).await?;
    // The request that won a ticket is the first for it in the batch.
    let mut winner: HashMap<&str, &CheckInRequest> = HashMap::with_capacity(batch.tickets.len());
    for (r, _) in requests.iter().zip(&batch.won).filter(|(_, won)| **won) {
        winner.entry(r.ticket_id.as_str()).or_insert(r);
    }
    for t in &batch.tickets {
        let Some(r) = winner.get(t.id.as_str()) else { continue };
        events::record(&mut tx, &r.account_id, EventType::TicketCheckedIn, &super::events::ticket_data(t), r.now)
            .await?;
    }
    tx.commit().await?;
    Ok(batch.won)
}

/// Checks the gate's ticket in, once (D7.3), through `writer`; when another caller won, or the
/// ticket cannot be checked in, the ticket as it now is tells which.
pub async fn check_in_ticket(
    store: &Store,
    writer: &CheckinWriter,
    account_id: &str,
    gate: GateTicket,
    by: &str,
    now: i64,
    audit: Audit<'_>,
) -> StoreResult<CheckIn> {
    let id = gate.ticket.id.clone();
    let won = writer
        .write(CheckInRequest {
            account_id: account_id.to_string(),
            ticket_id: id.clone(),
            by: by.to_string(),
            now,
            key_id: audit.key_id.map(str::to_string),
            request_id: audit.request_id.clone(),
            action: audit.action.to_string(),
            entity_type: audit.entity_type.to_string(),
            summary: audit.summary.clone(),
        })
        .await?;
    if won {
        let mut ticket = gate.ticket;
        ticket.checked_in = true;
        ticket.checked_in_at = Some(now);
        ticket.checked_in_by = Some(by.to_string());
        return Ok(CheckIn::CheckedIn(ticket));
    }
    let t = store.gate_ticket_by_id(account_id, &id).await?;
    Ok(if t.ticket.checked_in { CheckIn::Already(t.ticket) } else { CheckIn::Refused(t) })
}

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
    let answer = match check_in_ticket(store, writer, account_id, gate, who.by, now, entry).await? {
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
