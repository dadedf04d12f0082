//! Campaign status changes (D3.1, D13.2, D17.37, D17.41): the one home of the rule "a campaign's
//! status moves, then its organizer's e-mail is queued and its `campaign.status.updated` event
//! recorded, in the change's own transaction", whoever moves it:
//! - [`update`]: `PATCH /campaigns/:campaignId` (any field, the status through its state machine);
//! - [`approve_in`]: a campaign approval request approved in the portal (pending_approval →
//!   approved), in the decision's transaction ([`crate::flows::approvals`]);
//! - [`archive_in`]: a cancellation (→ archived), in the cancellation's transaction
//!   ([`crate::flows::refunds::cancel`]).
//!
//! The store runs the statements: the guarded UPDATE, the audit entry, the notification and the
//! event rows.
use serde_json::{json, Value};

use crate::domain::campaigns::CampaignStatus;
use crate::domain::notifications::NotificationChannel;
use crate::domain::time::now_ms;
use crate::domain::webhooks::EventType;
use crate::domain::DomainError;
use crate::store::audit::{self, Audit};
use crate::store::campaigns::{self, Campaign};
use crate::store::notifications::{queue_notification, NewNotification};
use crate::store::portal::Actor;
use crate::store::refunds;
use crate::store::{approvals, events, Store, StoreError, StoreResult, StoreTx, UpdateError};

/// The campaign moved from `before` to `after` in `tx`: the organizer hears of it by e-mail
/// when `notifications.organizerEmail` is set (D13.2), and the organization's backend by the
/// `campaign.status.updated` event (D17.41), whose `data` is the campaign as its GET now shows it.
async fn announce(
    tx: &mut StoreTx,
    account_id: &str,
    before: &Campaign,
    after: &Campaign,
    data: &Value,
    now: i64,
) -> StoreResult<()> {
    if let Some(to) = campaigns::organizer_email_in(tx, account_id).await? {
        let payload = json!({"campaignId": after.id, "from": before.status.as_str(), "to": after.status.as_str()});
        let n = NewNotification {
            channel: NotificationChannel::Email.as_str(),
            event_type: "campaign.status.updated",
            recipient: &to,
            subject: None,
            payload: &payload,
        };
        queue_notification(tx, account_id, &n, now_ms()).await?;
    }
    events::record(tx, account_id, EventType::CampaignStatusUpdated, data, now).await?;
    Ok(())
}

/// Applies `change` to the account's campaign and writes the result with its audit entry (and,
/// when the status moved, its announcement), in one transaction. The write is conditional on
/// the row being unchanged since it was read; the update that loses a race is judged again
/// against the row as the winner left it.
pub async fn update(
    store: &Store,
    account_id: &str,
    id: &str,
    change: impl Fn(&Campaign) -> Result<Campaign, DomainError>,
    audit: Audit<'_>,
) -> Result<Campaign, UpdateError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match try_update(store, account_id, id, &change, &audit).await {
            Err(UpdateError::Raced) if attempt < 8 => continue,
            other => return other,
        }
    }
}

async fn try_update(
    store: &Store,
    account_id: &str,
    id: &str,
    change: &impl Fn(&Campaign) -> Result<Campaign, DomainError>,
    audit: &Audit<'_>,
) -> Result<Campaign, UpdateError> {
    let mut tx = store.begin().await?;
    let before = campaigns::read_in(&mut tx, account_id, id).await?.ok_or(StoreError::NotFound("campaign"))?;
    let mut after = change(&before)?;
    after.updated_at = now_ms().max(before.updated_at + 1);
    campaigns::write_in(&mut tx, account_id, &before, &after).await?;
    let moved = before.status != after.status;
    let action = if moved { "campaign.status_changed" } else { "campaign.updated" };
    let summary = json!({"before": campaigns::summary(&before), "after": campaigns::summary(&after)});
    let entry = Audit { action, entity_id: id, summary, request_id: audit.request_id.clone(), ..*audit };
    audit::record(&mut tx, account_id, &entry).await?;
    if moved {
        let data = super::events::campaign_data(&after);
        announce(&mut tx, account_id, &before, &after, &data, after.updated_at).await?;
    }
    tx.commit().await?;
    Ok(after)
}

/// The effect of an approved campaign approval request: pending_approval → approved (D3.1), in
/// the decision's transaction. `Some(reason)` when it cannot apply (the decision then stays
/// pending).
pub(crate) async fn approve_in(
    tx: &mut StoreTx,
    store: &Store,
    account_id: &str,
    id: &str,
    actor: &Actor,
    now: i64,
) -> StoreResult<Option<String>> {
    let before = match store.campaign(account_id, id).await {
        Ok(c) => c,
        Err(StoreError::NotFound(_)) => return Ok(Some(format!("campaign {id} not found"))),
        Err(e) => return Err(e),
    };
    if !before.status.can_move_to(CampaignStatus::Approved) || before.status == CampaignStatus::Approved {
        return Ok(Some(format!("campaign {id} is {}, not pending_approval", before.status.as_str())));
    }
    let Some(after) = approvals::approve_campaign(tx, account_id, &before, actor, now).await? else {
        return Ok(Some(format!("campaign {id} changed while this decision ran")));
    };
    let data = super::events::campaign_data(&after);
    announce(tx, account_id, &before, &after, &data, after.updated_at).await?;
    Ok(None)
}

/// A cancellation's move (D17.37): the campaign archived (its first cancellation's time and
/// reason kept) with its audit entry, announced when that moved its status, in the
/// cancellation's transaction. Cancelling again changes nothing, except that a first
/// `refund: false` followed by `refund: true` asks for the refunds then. Returns the campaign
/// as it now is and whether this call asked for the refunds (the caller queues their filing).
pub(crate) async fn archive_in(
    tx: &mut StoreTx,
    account_id: &str,
    id: &str,
    reason: Option<&str>,
    refund: bool,
    audit: Audit<'_>,
    now: i64,
) -> StoreResult<(Campaign, bool)> {
    let before = campaigns::lock_in(tx, account_id, id).await?.ok_or(StoreError::NotFound("campaign"))?;
    let was = campaigns::cancellation_in(tx, id).await?;
    let start_refunds = refund && !was.refunding;
    if was.cancelled_at.is_some() && !start_refunds {
        return Ok((before, false));
    }
    let updated_at = now.max(before.updated_at + 1);
    campaigns::mark_cancelled(tx, id, reason, refund || was.refunding, updated_at, now).await?;
    let after = campaigns::read_in(tx, account_id, id).await?.ok_or(StoreError::NotFound("campaign"))?;
    let summary = json!({"before": campaigns::summary(&before), "after": campaigns::summary(&after),
        "reason": reason, "refund": refund});
    let entry = Audit { action: "campaign.cancelled", entity_id: id, summary, ..audit };
    audit::record(tx, account_id, &entry).await?;
    if before.status != CampaignStatus::Archived {
        // The campaign as its GET now shows it (D17.41): with its refund counters.
        let mut data = super::events::campaign_data(&after);
        let c = refunds::counts_in(tx, id).await?;
        if let Some(object) = data.as_object_mut() {
            object.insert(
                "refunds".into(),
                json!({"requested": c.requested, "succeeded": c.succeeded, "failed": c.failed}),
            );
        }
        announce(tx, account_id, &before, &after, &data, now).await?;
    }
    Ok((after, start_refunds))
}
