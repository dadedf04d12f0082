//! Approval requests, four eyes (spec "Approval request"; D14.2, D15.3, D16.15, D16.19): one
//! home for filing, listing and deciding them, from the portal, the operator's CLI and the
//! console (an organization member on a withdrawal awaiting approval, D17.30).
//! The rules:
//! - any active member files a request and may cancel their own while it is pending;
//! - a member with approvals:decide approves or rejects (a withdrawal request: withdrawals:approve
//!   is enough), never their own request; the operator decides any request;
//! - a decision moves a pending request once (approved, rejected, cancelled are final) and
//!   applies its effect in the same store transaction, or nothing at all: Tessera's own
//!   withdrawal request releases the withdrawal for payout (approved) or cancels it and releases
//!   its hold (rejected); a member's request approved in the portal activates
//!   `requestPayload.memberId` (member) or approves `requestPayload.campaignId` (campaign). An
//!   effect that cannot apply is a conflict, and the request stays pending. The operator's
//!   decision applies only the withdrawal effect; a member's request it decides is recorded.
use std::collections::BTreeSet;

use serde_json::Value;

use crate::domain::portal::{
    ApprovalEntity, ApprovalFiling, ApprovalStatus, Decision, DecisionRequest, Verdict, APPROVALS_DECIDE,
    WITHDRAWALS_APPROVE,
};
use crate::store::approvals::{self, ApprovalRequest, DecisionAudit};
use crate::store::portal::Actor;
use crate::store::{withdrawals, Store, StoreError, StoreTx};

/// What deciding refuses beyond the store's answers.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Only the member who filed a request may cancel it.
    #[error("only the member who filed a request may cancel it")]
    NotRequester,
    /// The member lacks approvals:decide (and, for a withdrawal request, withdrawals:approve).
    #[error("the member may not decide this request")]
    NotPermitted,
    /// Four eyes: nobody decides their own request.
    #[error("nobody decides their own request (four eyes)")]
    OwnRequest,
}

pub type ApprovalResult<T> = Result<T, ApprovalError>;

/// A member deciding in the portal.
#[derive(Debug, Clone)]
pub struct PortalDecider<'a> {
    pub member_id: &'a str,
    pub permissions: &'a BTreeSet<String>,
    pub actor: Actor,
}

/// Which effects a decision applies (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effects {
    /// The portal: every request's effect.
    All,
    /// The operator: Tessera's own withdrawal requests only.
    WithdrawalOnly,
}

/// Files a request (pending) for a member.
pub async fn file(
    store: &Store,
    account_id: &str,
    filing: &ApprovalFiling,
    actor: &Actor,
    now: i64,
) -> ApprovalResult<ApprovalRequest> {
    let reason = filing.reason.as_deref();
    Ok(store.file_approval(account_id, filing.entity_type, reason, &filing.payload, actor, now).await?)
}

/// Requests, oldest first: of one account (the portal) or all (the operator), optionally of one
/// status.
pub async fn list(
    store: &Store,
    account_id: Option<&str>,
    status: Option<ApprovalStatus>,
) -> ApprovalResult<Vec<ApprovalRequest>> {
    Ok(store.list_approvals(account_id, status).await?)
}

/// A decision in the portal: the requester cancels, a decider (four eyes) approves or rejects.
pub async fn decide_in_portal(
    store: &Store,
    account_id: &str,
    id: &str,
    req: &DecisionRequest,
    who: &PortalDecider<'_>,
    now: i64,
) -> ApprovalResult<ApprovalRequest> {
    let scope = Some(account_id);
    let request = store.approval(scope, id).await?;
    let own = request.requested_by.as_deref() == Some(who.member_id);
    let note = req.note.as_deref();
    let decision = match req.verdict {
        Verdict::Cancel if !own => return Err(ApprovalError::NotRequester),
        Verdict::Cancel => {
            if !store.cancel_approval(account_id, id, note, &who.actor, now).await? {
                return Err(already_decided(store, scope, id).await);
            }
            return Ok(store.approval(scope, id).await?);
        }
        Verdict::Decide(d) => d,
    };
    let withdrawal = request.entity_type == ApprovalEntity::Withdrawal;
    let may = |p: &str| who.permissions.contains(p);
    if !(may(APPROVALS_DECIDE) || (withdrawal && may(WITHDRAWALS_APPROVE))) {
        return Err(ApprovalError::NotPermitted);
    }
    if own {
        return Err(ApprovalError::OwnRequest);
    }
    let audit = if is_tessera_withdrawal(&request) {
        DecisionAudit::Decider { decided_by: who.member_id, request_id: who.actor.request_id.clone() }
    } else {
        DecisionAudit::Portal(&who.actor)
    };
    let decided = Decided { decision, note, decided_by: who.member_id, audit, actor: &who.actor };
    settle(store, scope, &request, &decided, Effects::All, now).await
}

/// The operator decides any request (`admin approval decide`).
pub async fn decide_as_operator(
    store: &Store,
    id: &str,
    decision: Decision,
    note: Option<&str>,
    now: i64,
) -> ApprovalResult<ApprovalRequest> {
    let request = store.approval(None, id).await?;
    let actor = Actor::operator();
    let audit = DecisionAudit::Decider { decided_by: "operator", request_id: None };
    let decided = Decided { decision, note, decided_by: "operator", audit, actor: &actor };
    settle(store, None, &request, &decided, Effects::WithdrawalOnly, now).await
}

/// A console member decides a withdrawal awaiting approval (D17.30): four eyes against the
/// member who asked for it (`withdrawals.requested_by`), then exactly the operator's decision
/// (the withdrawal effect in the decision's transaction), the audit entry's `decidedBy` the
/// member's id. The withdrawal must be the account's (404 otherwise).
pub async fn decide_in_console(
    store: &Store,
    account_id: &str,
    withdrawal_id: &str,
    decision: Decision,
    member_id: &str,
    request_id: Option<String>,
    now: i64,
) -> ApprovalResult<ApprovalRequest> {
    let w = store.withdrawal(account_id, withdrawal_id).await?;
    if w.requested_by.as_deref() == Some(member_id) {
        return Err(ApprovalError::OwnRequest);
    }
    let request = match store.withdrawal_approval(account_id, withdrawal_id).await {
        Ok(r) => r,
        Err(StoreError::NotFound(_)) => {
            return Err(
                StoreError::Conflict(format!("the withdrawal is {}, not awaiting approval", w.status.as_str())).into()
            )
        }
        Err(e) => return Err(e.into()),
    };
    let actor = Actor { user_id: None, member_id: None, request_id: request_id.clone() };
    let audit = DecisionAudit::Decider { decided_by: member_id, request_id };
    let decided = Decided { decision, note: None, decided_by: member_id, audit, actor: &actor };
    settle(store, Some(account_id), &request, &decided, Effects::WithdrawalOnly, now).await
}

/// A request Tessera filed for a withdrawal above the account's threshold (D14.2).
fn is_tessera_withdrawal(r: &ApprovalRequest) -> bool {
    r.entity_type == ApprovalEntity::Withdrawal && r.requested_by.is_none()
}

/// A decision and who made it.
struct Decided<'a> {
    decision: Decision,
    note: Option<&'a str>,
    /// `decided_by` of the row: a member id or `operator`.
    decided_by: &'a str,
    audit: DecisionAudit<'a>,
    /// Who the effects' own audit entries name.
    actor: &'a Actor,
}

async fn already_decided(store: &Store, scope: Option<&str>, id: &str) -> ApprovalError {
    match store.approval(scope, id).await {
        Ok(current) => StoreError::Conflict(format!("the approval request is already {}", current.status)).into(),
        Err(e) => e.into(),
    }
}

/// The decision's one transaction: the status move (pending only), the effect, the audit entry.
async fn settle(
    store: &Store,
    scope: Option<&str>,
    request: &ApprovalRequest,
    d: &Decided<'_>,
    effects: Effects,
    now: i64,
) -> ApprovalResult<ApprovalRequest> {
    let status = d.decision.status();
    let mut tx = store.begin().await?;
    if !approvals::mark_decided(&mut tx, scope, &request.id, status, Some(d.decided_by), d.note, now).await? {
        tx.rollback().await?;
        return Err(already_decided(store, scope, &request.id).await);
    }
    if let Some(why) = apply_effect(&mut tx, store, request, d, effects, now).await? {
        tx.rollback().await?;
        return Err(StoreError::Conflict(why).into());
    }
    approvals::audit_decision(&mut tx, request, status, d.note, &d.audit).await?;
    tx.commit().await?;
    Ok(store.approval(scope, &request.id).await?)
}

/// Applies what the decision changes, in its transaction. `Some(reason)` when it cannot apply.
async fn apply_effect(
    tx: &mut StoreTx,
    store: &Store,
    request: &ApprovalRequest,
    d: &Decided<'_>,
    effects: Effects,
    now: i64,
) -> ApprovalResult<Option<String>> {
    let target = |key: &str| request.request_payload.get(key).and_then(Value::as_str).map(str::to_string);
    let account = request.account_id.as_str();
    if is_tessera_withdrawal(request) {
        let Some(w) = target("withdrawalId") else { return Ok(None) };
        let moved = match d.decision {
            Decision::Approved => withdrawals::release_awaiting(tx, account, &w, now).await?,
            Decision::Rejected => super::payouts::reject_in(tx, &w, now).await?,
        };
        return Ok((!moved).then(|| format!("withdrawal {w} is no longer awaiting approval")));
    }
    if effects == Effects::WithdrawalOnly || d.decision != Decision::Approved {
        return Ok(None);
    }
    match request.entity_type {
        ApprovalEntity::Member => match target("memberId") {
            Some(m) => {
                let moved = approvals::activate_member(tx, account, &m, d.actor, now).await?;
                Ok((!moved).then(|| format!("member {m} is not a pending member of this reseller")))
            }
            None => Ok(Some("requestPayload.memberId names no member".to_string())),
        },
        ApprovalEntity::Campaign => match target("campaignId") {
            Some(c) => Ok(super::campaigns::approve_in(tx, store, account, &c, d.actor, now).await?),
            None => Ok(Some("requestPayload.campaignId names no campaign".to_string())),
        },
        _ => Ok(None),
    }
}
