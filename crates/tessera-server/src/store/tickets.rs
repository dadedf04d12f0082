//! Tickets (D7, D16.9): the row every read shows, issuing them (`issue`, in the fulfilment
//! flow's transaction), the reads by purchase and by holder, and at the gate: lookup by ticket
//! code or QR token, and the exactly-once check-in.
//! The check-in's statements ([`check_in_batch`], in the transaction of `flows::gate`, which
//! adds each winner's event): one conditional update (`... AND checked_in = 0 AND status =
//! 'valid'`) with its audit entry, so under any concurrency one caller wins and every other
//! caller reads the winner's `checkedInAt` and `checkedInBy`.
use std::collections::{BTreeMap, HashMap};

use sqlx::Row;

use super::audit::{record_many, Audit};
use super::live::{LiveEvent, LiveKind};
use super::payments::{bind_all, placeholders};
use super::query::Arg;
use super::sqlite_read::Get;
use super::{Store, StoreError, StoreResult, StoreTx};
use crate::domain::campaigns::CampaignStatus;
use crate::domain::payments::Attendee;
use crate::domain::tickets::TicketStatus;

/// A ticket as every read shows it (D16.9).
#[derive(Debug, Clone, PartialEq)]
pub struct Ticket {
    pub id: String,
    pub ticket_code: String,
    pub qr_token: String,
    pub status: TicketStatus,
    pub checked_in: bool,
    pub checked_in_at: Option<i64>,
    pub checked_in_by: Option<String>,
    pub ticket_type_id: String,
    pub ticket_type_name: String,
    pub campaign_id: String,
    pub campaign_title: String,
    pub attendee_name: Option<String>,
    pub attendee_email: String,
    /// The attendee's answers to the ticket type's `required_attendee_fields` (D17.12).
    pub attendee_answers: BTreeMap<String, String>,
    pub transaction_reference: String,
    pub created_at: i64,
}

pub(crate) const TICKET_COLUMNS: &str = "k.id, k.ticket_code, k.qr_token, k.status, k.checked_in, k.checked_in_at, \
    k.checked_in_by, k.ticket_type_id, tt.name AS ticket_type_name, k.campaign_id, c.title AS campaign_title, \
    k.attendee_name, k.attendee_email, k.attendee_answers, k.transaction_reference, k.created_at";
pub(crate) const TICKET_FROM: &str =
    "FROM tickets k JOIN ticket_types tt ON tt.id = k.ticket_type_id JOIN campaigns c ON c.id = k.campaign_id";

/// A ticket from a row of either driver (`sqlite_read::Get`).
pub(crate) fn ticket_from_row(r: &impl Get) -> StoreResult<Ticket> {
    Ok(Ticket {
        id: r.get("id")?,
        ticket_code: r.get("ticket_code")?,
        qr_token: r.get("qr_token")?,
        status: TicketStatus::parse("status", &r.get::<String>("status")?)
            .map_err(|_| StoreError::Corrupt("ticket status".into()))?,
        checked_in: r.get::<i64>("checked_in")? != 0,
        checked_in_at: r.get("checked_in_at")?,
        checked_in_by: r.get("checked_in_by")?,
        ticket_type_id: r.get("ticket_type_id")?,
        ticket_type_name: r.get("ticket_type_name")?,
        campaign_id: r.get("campaign_id")?,
        campaign_title: r.get("campaign_title")?,
        attendee_name: r.get("attendee_name")?,
        attendee_email: r.get("attendee_email")?,
        attendee_answers: match r.get::<Option<String>>("attendee_answers")? {
            None => BTreeMap::new(),
            Some(a) => serde_json::from_str(&a).map_err(|_| StoreError::Corrupt("ticket attendee answers".into()))?,
        },
        transaction_reference: r.get("transaction_reference")?,
        created_at: r.get("created_at")?,
    })
}

/// A ticket and whether its campaign still allows check-in.
#[derive(Debug, Clone)]
pub struct GateTicket {
    pub ticket: Ticket,
    pub campaign_archived: bool,
}

/// What a check-in did.
#[derive(Debug, Clone)]
pub enum CheckIn {
    /// This caller checked the ticket in.
    CheckedIn(Ticket),
    /// Someone did before (the ticket shows when and by whom).
    Already(Ticket),
    /// The ticket is void, or its campaign is archived: never checked in.
    Refused(GateTicket),
}

/// One check-in for the group-committing writer (owned, so it can wait in its queue).
#[derive(Debug, Clone)]
pub struct CheckInRequest {
    pub account_id: String,
    pub ticket_id: String,
    pub by: String,
    pub now: i64,
    pub key_id: Option<String>,
    pub request_id: Option<String>,
    pub action: String,
    pub entity_type: String,
    pub summary: serde_json::Value,
}

/// The group-committing writer of check-ins (answers: whether each one won); `flows::gate`
/// starts it with the batch's transaction.
pub type CheckinWriter = super::group_commit::GroupCommit<CheckInRequest, bool>;

/// What one batch of check-ins wrote: per request whether it checked its ticket in, and the
/// tickets checked in as they now read, in check-in order.
#[derive(Debug, Default)]
pub struct CheckedIn {
    pub won: Vec<bool>,
    pub tickets: Vec<Ticket>,
}

fn gate_from_row(r: &impl Get) -> StoreResult<GateTicket> {
    let status: String = r.get("campaign_status")?;
    Ok(GateTicket { ticket: ticket_from_row(r)?, campaign_archived: status == CampaignStatus::Archived.as_str() })
}

/// Tickets a transaction issued, in issue order, in the caller's transaction.
pub(crate) async fn tickets_of_in(conn: &mut sqlx::AnyConnection, reference: &str) -> StoreResult<Vec<Ticket>> {
    let rows = sqlx::query(&format!(
        "SELECT {TICKET_COLUMNS} {TICKET_FROM} WHERE k.transaction_reference = $1 ORDER BY k.created_at, k.id"
    ))
    .bind(reference)
    .fetch_all(conn)
    .await?;
    rows.iter().map(ticket_from_row).collect()
}

impl Store {
    /// Tickets a transaction issued, in issue order.
    pub async fn tickets_of(&self, reference: &str) -> StoreResult<Vec<Ticket>> {
        let mut conn = self.reader().acquire().await?;
        tickets_of_in(&mut conn, reference).await
    }

    /// Tickets of several transactions (list reads), grouped by reference, in issue order.
    pub async fn tickets_of_many(&self, references: &[String]) -> StoreResult<HashMap<String, Vec<Ticket>>> {
        let mut out: HashMap<String, Vec<Ticket>> = HashMap::new();
        if references.is_empty() {
            return Ok(out);
        }
        let sql = format!(
            "SELECT {TICKET_COLUMNS} {TICKET_FROM} WHERE k.transaction_reference IN ({}) ORDER BY k.created_at, k.id",
            placeholders(references.len())
        );
        for row in bind_all(sqlx::query(&sql), references).fetch_all(self.reader()).await? {
            let t = ticket_from_row(&row)?;
            out.entry(t.transaction_reference.clone()).or_default().push(t);
        }
        Ok(out)
    }

    /// A ticket of the account by its typed code (normalized by the caller) or its QR token;
    /// `campaign` narrows to one campaign (a campaign key's view). Another account's ticket is
    /// no ticket (404).
    pub async fn gate_ticket(&self, account_id: &str, campaign: Option<&str>, code: &str) -> StoreResult<GateTicket> {
        let column = if code.starts_with("qr_") { "k.qr_token" } else { "k.ticket_code" };
        let sql = format!(
            "SELECT {TICKET_COLUMNS}, c.status AS campaign_status {TICKET_FROM} WHERE {column} = $1 AND k.account_id = $2"
        );
        let t = self.gate_row(&sql, code, account_id).await?;
        match campaign {
            Some(c) if c != t.ticket.campaign_id => Err(StoreError::NotFound("ticket")),
            _ => Ok(t),
        }
    }

    /// The account's ticket of the gate by its id, as it now is.
    pub async fn gate_ticket_by_id(&self, account_id: &str, id: &str) -> StoreResult<GateTicket> {
        let sql = format!(
            "SELECT {TICKET_COLUMNS}, c.status AS campaign_status {TICKET_FROM} WHERE k.id = $1 AND k.account_id = $2"
        );
        self.gate_row(&sql, id, account_id).await
    }

    /// One ticket of the gate by `sql` with parameters ($1 the ticket key, $2 the account), read
    /// in place on a SQLite file: the gate's hot read.
    async fn gate_row(&self, sql: &str, key: &str, account_id: &str) -> StoreResult<GateTicket> {
        let found = match self.fast_reader() {
            Some(fast) => {
                fast.query_opt(sql, &[Arg::Text(key.to_string()), Arg::Text(account_id.to_string())], |r| {
                    gate_from_row(r)
                })?
            }
            None => match sqlx::query(sql).bind(key).bind(account_id).fetch_optional(self.reader()).await? {
                Some(row) => Some(gate_from_row(&row)?),
                None => None,
            },
        };
        found.ok_or(StoreError::NotFound("ticket"))
    }

    /// The tickets a holder has in one campaign of the account (my-tickets), in issue order.
    pub async fn holder_tickets(&self, account_id: &str, campaign_id: &str, email: &str) -> StoreResult<Vec<Ticket>> {
        let rows = sqlx::query(&format!(
            "SELECT {TICKET_COLUMNS} {TICKET_FROM} WHERE k.campaign_id = $1 AND lower(k.attendee_email) = lower($2) \
             AND k.account_id = $3 ORDER BY k.created_at, k.id"
        ))
        .bind(campaign_id)
        .bind(email)
        .bind(account_id)
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(ticket_from_row).collect()
    }

    /// The tickets of one transaction of the account (notification rendering).
    pub async fn account_tickets_of(&self, account_id: &str, reference: &str) -> StoreResult<Vec<Ticket>> {
        let rows = sqlx::query(&format!(
            "SELECT {TICKET_COLUMNS} {TICKET_FROM} WHERE k.transaction_reference = $1 AND k.account_id = $2 \
             ORDER BY k.created_at, k.id"
        ))
        .bind(reference)
        .bind(account_id)
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(ticket_from_row).collect()
    }
}

/// Tickets to issue for one paid purchase.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewTickets<'a> {
    pub account_id: &'a str,
    pub campaign_id: &'a str,
    pub ticket_type_id: &'a str,
    pub reference: &'a str,
    pub attendee_name: Option<&'a str>,
    pub attendee_email: &'a str,
    pub quantity: i64,
    /// One attendee per ticket, in ticket order (D17.12); empty: every ticket is the buyer's.
    pub attendees: &'a [Attendee],
}

/// Issues `quantity` valid tickets, each with its own code and QR token, in the caller's
/// transaction. Ticket `i` carries attendee `i`'s name, e-mail (the buyer's when absent) and
/// answers.
pub(crate) async fn issue(conn: &mut sqlx::AnyConnection, t: &NewTickets<'_>, now: i64) -> StoreResult<()> {
    for i in 0..usize::try_from(t.quantity).unwrap_or(0) {
        let attendee = t.attendees.get(i);
        let name = attendee.and_then(|a| a.full_name.as_deref()).or(t.attendee_name);
        let email = attendee.and_then(|a| a.email.as_deref()).unwrap_or(t.attendee_email);
        let answers =
            attendee.filter(|a| !a.answers.is_empty()).map(|a| serde_json::to_string(&a.answers).unwrap_or_default());
        sqlx::query(
            "INSERT INTO tickets (id, account_id, campaign_id, ticket_type_id, transaction_reference, \
             ticket_code, qr_token, status, attendee_name, attendee_email, attendee_answers, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'valid', $8, $9, $10, $11)",
        )
        .bind(crate::domain::new_id())
        .bind(t.account_id)
        .bind(t.campaign_id)
        .bind(t.ticket_type_id)
        .bind(t.reference)
        .bind(crate::domain::payments::new_ticket_code())
        .bind(crate::domain::payments::new_qr_token())
        .bind(name)
        .bind(email)
        .bind(answers)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Check-ins in the caller's transaction, in three statements whatever their number: one
/// conditional `UPDATE … RETURNING id` for every ticket of the batch, one multi-row insert of the
/// winners' audit entries and one read of the winners' tickets, with one live event per
/// campaign (delivered at the commit). Within a batch the first request for a ticket is the one that
/// can win (its time and gate agent are written); later requests for that ticket lose, as
/// they would one transaction later. Returns, per request, whether it checked the ticket in.
pub(crate) async fn check_in_batch(tx: &mut StoreTx, requests: &[CheckInRequest]) -> StoreResult<CheckedIn> {
    // The first request per ticket id; only these take part in the update.
    let mut first: HashMap<&str, usize> = HashMap::with_capacity(requests.len());
    for (i, r) in requests.iter().enumerate() {
        first.entry(r.ticket_id.as_str()).or_insert(i);
    }
    let mut candidates: Vec<usize> = first.into_values().collect();
    candidates.sort_unstable();
    let mut won = vec![false; requests.len()];
    let mut checked: Vec<Ticket> = Vec::new();
    // Four parameters per candidate (id, time, agent, account): far under either database's limit.
    let ids: Vec<String> = (0..candidates.len()).map(|k| format!("${}", k * 4 + 1)).collect();
    let case = |offset: usize| -> String {
        let arms: Vec<String> =
            (0..candidates.len()).map(|k| format!("WHEN ${} THEN ${}", k * 4 + 1, k * 4 + 1 + offset)).collect();
        format!("CASE id {} END", arms.join(" "))
    };
    let sql = format!(
        "UPDATE tickets SET checked_in = 1, checked_in_at = {}, checked_in_by = {} \
         WHERE id IN ({}) AND account_id = {} AND checked_in = 0 AND status = 'valid' \
         AND EXISTS (SELECT 1 FROM campaigns c WHERE c.id = tickets.campaign_id AND c.status <> 'archived') \
         RETURNING id, campaign_id",
        case(1),
        case(2),
        ids.join(", "),
        case(3)
    );
    let mut update = sqlx::query(&sql);
    for &i in &candidates {
        let r = &requests[i];
        update = update.bind(&r.ticket_id).bind(r.now).bind(&r.by).bind(&r.account_id);
    }
    // Ticket id → its campaign, for each ticket this batch checked in.
    let mut updated: HashMap<String, String> = HashMap::new();
    for row in update.fetch_all(&mut **tx).await? {
        updated.insert(row.try_get("id")?, row.try_get("campaign_id")?);
    }
    let winners: Vec<usize> =
        candidates.into_iter().filter(|&i| updated.contains_key(requests[i].ticket_id.as_str())).collect();
    if !winners.is_empty() {
        let entries: Vec<(&str, Audit<'_>)> = winners
            .iter()
            .map(|&i| {
                let r = &requests[i];
                let entry = Audit {
                    key_id: r.key_id.as_deref(),
                    request_id: r.request_id.clone(),
                    action: &r.action,
                    entity_type: &r.entity_type,
                    entity_id: &r.ticket_id,
                    summary: r.summary.clone(),
                };
                (r.account_id.as_str(), entry)
            })
            .collect();
        record_many(tx, &entries).await?;
        // Each check-in is an event of its account, as the ticket now reads (D17.25).
        let sql = format!(
            "SELECT {TICKET_COLUMNS} {TICKET_FROM} WHERE k.id IN ({}) ORDER BY k.checked_in_at, k.id",
            placeholders(winners.len())
        );
        let ids: Vec<String> = winners.iter().map(|&i| requests[i].ticket_id.clone()).collect();
        checked = bind_all(sqlx::query(&sql), &ids)
            .fetch_all(&mut **tx)
            .await?
            .iter()
            .map(ticket_from_row)
            .collect::<StoreResult<_>>()?;
        for i in winners {
            won[i] = true;
        }
    }
    // One live event per campaign per batch, not per ticket (D17.5, D17.32).
    let events: Vec<LiveEvent> = requests
        .iter()
        .zip(&won)
        .filter(|(_, w)| **w)
        .filter_map(|(r, _)| updated.get(&r.ticket_id).map(|c| (r.account_id.as_str(), c.as_str())))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|(a, c)| LiveEvent {
            account_id: a.to_string(),
            campaign_id: Some(c.to_string()),
            kind: LiveKind::Checkin,
        })
        .collect();
    tx.publish_all(events).await?;
    Ok(CheckedIn { won, tickets: checked })
}
