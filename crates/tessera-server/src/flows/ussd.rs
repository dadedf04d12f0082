//! Votes by dial (D17.19–23, D17.40): a gateway's request, already read from its wire into a
//! [`UssdRequest`], moves the caller's stored session one step and answers one screen.
//!
//! 1. The account is the route's slug and the request must carry its `ussd.callbackToken`
//!    (compared in constant time); anything else is 401 and nothing is read further.
//! 2. `ussd.enabled` not true, or the voting module off: the session ends at once.
//! 3. A new session starts at the nominee code screen, or at the pending menu when the phone has
//!    a pending USSD vote from the last 10 minutes (D17.22). Inputs given with the dial go
//!    straight through the screens (D17.20, D17.40).
//! 4. Each input moves the session (`domain::ussd::Step`); a repeated request (Africa's
//!    Talking's cumulative `text` with nothing new, an old Hubtel `Sequence`, any request to an
//!    ended session) shows the stored screen again and changes nothing.
//! 5. A confirmation ENDs the session and, in the same store transaction, opens the pending vote
//!    transaction (channel `ussd`) with its verify poll and its `momo_charge` job; the charge is
//!    made by a worker after the handset is free ([`charge`]). The pending menu's "send again"
//!    queues that job again, "cancel" abandons the vote (a payment that still arrives is credited
//!    late, D16.4), in the same transaction as the session.
//! 6. The session is saved only if no other request saved it since it was read; the loser of
//!    such a race shows the winner's screen.
use serde_json::{json, Value};
use subtle::ConstantTimeEq;

use crate::domain::campaigns::{Campaign, CampaignStatus, CampaignType};
use crate::domain::participants::ParticipantStatus;
use crate::domain::payments::{retry_delay_ms, Order, TransactionType, TxStatus};
use crate::domain::settings::UssdSettings;
use crate::domain::time::now_ms;
use crate::domain::ussd::{self, screen, Gateway, Network, Nominee, Step, TRIES};
use crate::domain::DomainError;
use crate::providers::payments::{adapter, ChargeFacts, MobileMoneyCharge, ProviderError, ProviderId};
use crate::state::AppState;
use crate::store::accounts::Account;
use crate::store::jobs::{self, queue};
use crate::store::participants::Participant;
use crate::store::payments::Transaction;
use crate::store::ussd::{save, UssdSession};
use crate::store::StoreError;

use super::checkout::{open_in, prepare};
use super::fulfilment::{release, release_in};
use super::modules::{self, Module};
use super::routing::{credentials, credentials_now, fee_policy, payments_settings, routes};
use super::schedule::first_poll_ms;
use super::{FlowError, FlowResult, Next};

/// A gateway's request in one shape (the adapters in `http/ussd` read each wire into it).
#[derive(Debug, Clone)]
pub struct UssdRequest {
    /// The gateway's session id (Nalo has none: its MSISDN).
    pub session_id: String,
    /// `233…` form ([`ussd::normalize_msisdn`]).
    pub msisdn: String,
    /// The gateway's network field as sent.
    pub network: Option<String>,
    pub kind: RequestKind,
}

#[derive(Debug, Clone)]
pub enum RequestKind {
    /// A new session, with the whole dial string when the gateway sends it.
    Start { dial: Option<String> },
    /// Every input so far (Africa's Talking's `text`; a session it has not seen starts, its
    /// inputs being those given with the dial).
    Cumulative { inputs: Vec<String> },
    /// One input; `sequence` when the gateway numbers its requests (Hubtel).
    Input { input: String, sequence: Option<i64> },
    /// The gateway ended the session (Hubtel's `Release` and `Timeout`).
    Abort,
}

/// What the gateway shows: a screen, and whether the session ends with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub screen: String,
    pub end: bool,
}

impl Reply {
    fn end(screen: String) -> Self {
        Reply { screen, end: true }
    }
}

fn unauthorized(message: &str) -> FlowError {
    DomainError::Refused { status: 401, code: "invalid_key", message: message.to_string() }.into()
}

/// The account of the route and its `ussd` settings, when the token is its callback token.
async fn authorize(state: &AppState, slug: &str, token: Option<&str>) -> FlowResult<(Account, UssdSettings)> {
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return Err(DomainError::Refused {
            status: 401,
            code: "missing_auth",
            message: "the token query parameter (the account's ussd.callbackToken) is required".into(),
        }
        .into());
    };
    let refused = || unauthorized("the account or its USSD callback token is not known");
    let account = match state.store.account_by_slug(slug).await {
        Ok(a) => a,
        Err(StoreError::NotFound(_)) => return Err(refused()),
        Err(e) => return Err(e.into()),
    };
    let settings = UssdSettings::from_value(&state.store.settings_category(&account.id, "ussd").await?);
    let expected = state
        .unseal_setting(&account.id, "ussd.config.callbackToken", settings.token_sealed.as_deref())
        .ok_or_else(refused)?;
    if !bool::from(expected.as_bytes().ct_eq(token.as_bytes())) {
        return Err(refused());
    }
    Ok((account, settings))
}

/// Answers one gateway request (see the module docs).
pub async fn handle(
    state: &AppState,
    gateway: Gateway,
    slug: &str,
    token: Option<&str>,
    req: UssdRequest,
) -> FlowResult<Reply> {
    let (account, settings) = authorize(state, slug, token).await?;
    let voting_on = modules::enabled(state, &account.id, Module::Voting).await?;
    if !settings.enabled || !voting_on || account.status != crate::domain::accounts::AccountStatus::Enabled {
        return Ok(Reply::end(screen::not_available()));
    }
    let stored = state.store.ussd_session(&account.id, gateway.as_str(), &req.session_id).await?;
    let mut turn = Turn { state, account: &account, settings: &settings, req: &req, effect: None };
    let now = now_ms();
    let (mut session, read_at, inputs) = match (&req.kind, stored) {
        (RequestKind::Abort, Some(mut s)) => {
            let read_at = s.updated_at;
            s.ended = true;
            s.step = Step::Ended;
            return turn.finish(s, Some(read_at), now).await;
        }
        (RequestKind::Abort, None) => return Ok(Reply::end(String::new())),
        // Nalo keys sessions by the phone: a new dial is a new session over the old one.
        (RequestKind::Start { dial }, Some(s)) if gateway == Gateway::Nalo => {
            let read_at = s.updated_at;
            let (fresh, inputs) = turn.open(gateway, dial.as_deref(), &[], now).await?;
            (fresh, Some(read_at), inputs)
        }
        (_, Some(s)) if s.ended => return Ok(Reply::end(s.screen)),
        (RequestKind::Start { dial }, None) => {
            let (fresh, inputs) = turn.open(gateway, dial.as_deref(), &[], now).await?;
            (fresh, None, inputs)
        }
        (RequestKind::Cumulative { inputs }, None) => {
            let (fresh, dialled) = turn.open(gateway, None, inputs, now).await?;
            (fresh, None, dialled)
        }
        // A repeated first request: the screen again.
        (RequestKind::Start { .. }, Some(s)) => return Ok(Reply { screen: s.screen, end: false }),
        (RequestKind::Cumulative { inputs }, Some(mut s)) => {
            let done = usize::try_from(s.inputs).unwrap_or(usize::MAX);
            if inputs.len() <= done {
                return Ok(Reply { screen: s.screen, end: false });
            }
            let new = inputs[done..].to_vec();
            let read_at = s.updated_at;
            s.inputs = i64::try_from(inputs.len()).unwrap_or(i64::MAX);
            (s, Some(read_at), new)
        }
        (RequestKind::Input { input, sequence }, Some(mut s)) => {
            if sequence.is_some_and(|q| q <= s.sequence) {
                return Ok(Reply { screen: s.screen, end: false });
            }
            let read_at = s.updated_at;
            s.inputs += 1;
            if let Some(q) = sequence {
                s.sequence = *q;
            }
            (s, Some(read_at), vec![input.clone()])
        }
        // An input for a session never seen (it was pruned, or the gateway skipped the start):
        // start over.
        (RequestKind::Input { .. }, None) => {
            let (fresh, inputs) = turn.open(gateway, None, &[], now).await?;
            (fresh, None, inputs)
        }
    };
    for input in inputs {
        if session.ended {
            break;
        }
        turn.step(&mut session, &input).await?;
    }
    turn.finish(session, read_at, now).await
}

/// What a confirmation, a "send again" or a "cancel" changes with the session.
enum Effect {
    Vote(Box<crate::store::payments::NewTransaction>),
    Prompt(String),
    Cancel(String),
}

/// One request's work: the caller, the account's settings and the effect it leads to.
struct Turn<'a> {
    state: &'a AppState,
    account: &'a Account,
    settings: &'a UssdSettings,
    req: &'a UssdRequest,
    effect: Option<Effect>,
}

/// What the caller reads of a nominee and its campaign.
fn nominee_of(p: &Participant, c: &Campaign) -> Nominee {
    Nominee { name: p.name.clone(), campaign: c.title.clone(), vote_price: c.vote_price.unwrap_or(0) }
}

/// What a typed code finds.
enum Found {
    Votable(Box<(Participant, Campaign)>),
    NotVotable(String),
    Closed(String),
    Unknown,
}

impl Turn<'_> {
    /// A new session at its first screen, and the inputs given with the dial.
    async fn open(
        &self,
        gateway: Gateway,
        dial: Option<&str>,
        given: &[String],
        now: i64,
    ) -> FlowResult<(UssdSession, Vec<String>)> {
        let inputs = match dial {
            Some(dial) => ussd::dial_inputs(self.settings.service_code.as_deref(), dial),
            None => given.to_vec(),
        };
        let network = self
            .req
            .network
            .as_deref()
            .and_then(Network::from_gateway)
            .or_else(|| Network::from_msisdn(&self.req.msisdn))
            .map(|n| n.as_str().to_string());
        let mut session = UssdSession {
            account_id: self.account.id.clone(),
            gateway: gateway.as_str().to_string(),
            session_id: self.req.session_id.clone(),
            msisdn: self.req.msisdn.clone(),
            network,
            step: Step::AskCode { tries: 0 },
            screen: String::new(),
            ended: false,
            inputs: i64::try_from(given.len()).unwrap_or(i64::MAX),
            sequence: 1,
            reference: None,
            created_at: now,
            updated_at: now,
        };
        // No provider that can push a prompt: nothing to vote with (D18.5, D18.45).
        if !self.can_charge().await? {
            session.step = Step::Ended;
            session.ended = true;
            session.screen = screen::not_available();
            return Ok((session, Vec::new()));
        }
        // A caller who dialled straight through to a vote wants a new one; otherwise a pending
        // vote of this phone is offered first (D17.22).
        let since = now - ussd::PENDING_WINDOW_MS;
        let pending = if inputs.is_empty() {
            self.state.store.pending_ussd_vote(&self.account.id, &self.req.msisdn, since).await?
        } else {
            None
        };
        match pending {
            Some(t) => {
                session.screen = screen::pending(&self.nominee_name(&t).await, t.amount);
                session.reference = Some(t.reference.clone());
                session.step = Step::Pending { reference: t.reference };
            }
            None => session.screen = screen::ask_code(&self.title().await),
        }
        Ok((session, inputs))
    }

    /// Whether a provider that can push a prompt without a page is configured (D18.5).
    async fn can_charge(&self) -> FlowResult<bool> {
        let settings = payments_settings(self.state, &self.account.id).await?;
        let named = self
            .settings
            .provider
            .is_some_and(|p| p.can_push() && credentials(self.state, &self.account.id, &settings, p).is_some());
        Ok(named || !routes(self.state, &self.account.id, &settings, "ussd").is_empty())
    }

    /// The first screen's title: the campaign the code serves, else the account's name.
    async fn title(&self) -> String {
        if let Some(id) = &self.settings.campaign_id {
            if let Ok(c) = self.state.store.campaign(&self.account.id, id).await {
                return c.title;
            }
        }
        self.account.platform_name.clone()
    }

    async fn nominee_name(&self, t: &Transaction) -> String {
        match t.participant_id.as_deref() {
            Some(id) => self.state.store.participant(&self.account.id, id).await.map(|p| p.name).unwrap_or_default(),
            None => String::new(),
        }
    }

    /// Finds the nominee a caller typed (D17.20): among the account's approved voting campaigns
    /// (only `ussd.campaignId` when set), a running one first.
    async fn find(&self, code: &str) -> FlowResult<Found> {
        let Ok(code) = crate::domain::participants::parse_code("code", code) else {
            return Ok(Found::Unknown);
        };
        let now = now_ms();
        let mut best = Found::Unknown;
        for p in self.state.store.participants_by_code(&self.account.id, &code).await? {
            if self.settings.campaign_id.as_ref().is_some_and(|c| *c != p.campaign_id) {
                continue;
            }
            let c = match self.state.store.campaign(&self.account.id, &p.campaign_id).await {
                Ok(c) => c,
                Err(StoreError::NotFound(_)) => continue,
                Err(e) => return Err(e.into()),
            };
            if c.campaign_type != CampaignType::Voting || c.status != CampaignStatus::Approved {
                continue;
            }
            let running = now >= c.start_date && now <= c.end_date;
            match (running, p.status == ParticipantStatus::Active) {
                (true, true) => return Ok(Found::Votable(Box::new((p, c)))),
                (true, false) => best = Found::NotVotable(p.name),
                (false, _) if matches!(best, Found::Unknown) => best = Found::Closed(p.name),
                _ => {}
            }
        }
        Ok(best)
    }

    async fn nominee(&self, participant_id: &str) -> FlowResult<(Participant, Campaign, Nominee)> {
        let p = self.state.store.participant(&self.account.id, participant_id).await?;
        let c = self.state.store.campaign(&self.account.id, &p.campaign_id).await?;
        let n = nominee_of(&p, &c);
        Ok((p, c, n))
    }

    /// Moves the session by one input (D17.20, D17.22).
    async fn step(&mut self, s: &mut UssdSession, input: &str) -> FlowResult<()> {
        let input = input.trim();
        let end = |s: &mut UssdSession, screen: String| {
            s.screen = screen;
            s.step = Step::Ended;
            s.ended = true;
        };
        match s.step.clone() {
            Step::Pending { reference } => match input {
                "1" => {
                    let total = self.state.store.transaction_by_reference(&reference).await?.map_or(0, |t| t.amount);
                    end(s, screen::prompt_again(total, &s.msisdn));
                    self.effect = Some(Effect::Prompt(reference));
                }
                "2" => {
                    end(s, screen::pending_cancelled());
                    self.effect = Some(Effect::Cancel(reference));
                }
                "3" => {
                    s.step = Step::AskCode { tries: 0 };
                    s.reference = None;
                    s.screen = screen::ask_code(&self.title().await);
                }
                _ => {}
            },
            Step::AskCode { tries } => {
                let found = if ussd::is_plain(input) { self.find(input).await? } else { Found::Unknown };
                let retry = match found {
                    Found::Votable(found) => {
                        let (p, c) = *found;
                        let n = nominee_of(&p, &c);
                        s.screen = screen::ask_count(&n, self.settings.max_votes);
                        s.step = Step::AskCount { participant_id: p.id, tries: 0 };
                        return Ok(());
                    }
                    Found::NotVotable(name) => screen::not_votable(&name),
                    Found::Closed(name) => screen::closed(&name),
                    Found::Unknown => screen::unknown_code(input),
                };
                if tries + 1 >= TRIES {
                    let last = if retry.starts_with("Unknown") {
                        screen::unknown_code_end()
                    } else {
                        screen::too_many_tries()
                    };
                    end(s, last);
                } else {
                    s.screen = retry;
                    s.step = Step::AskCode { tries: tries + 1 };
                }
            }
            Step::AskCount { participant_id, tries } => match ussd::parse_count(input, self.settings.max_votes) {
                Some(votes) => {
                    let (_, _, n) = self.nominee(&participant_id).await?;
                    let settings = payments_settings(self.state, &self.account.id).await?;
                    let total = fee_policy(self.state, &settings).quote(n.vote_price.saturating_mul(votes)).amount;
                    s.screen = screen::confirm(&n, votes, total);
                    s.step = Step::Confirm { participant_id, votes };
                }
                None if tries + 1 >= TRIES => end(s, screen::bad_count_end(self.settings.max_votes)),
                None => {
                    s.screen = screen::bad_count(self.settings.max_votes);
                    s.step = Step::AskCount { participant_id, tries: tries + 1 };
                }
            },
            Step::Confirm { participant_id, votes } => match input {
                "1" => match self.vote(s, &participant_id, votes).await {
                    Ok((t, n)) => {
                        end(s, screen::confirmed(&n, votes, t.amount, &s.msisdn));
                        s.reference = Some(t.reference.clone());
                        self.effect = Some(Effect::Vote(Box::new(t)));
                    }
                    Err(reason) => end(s, reason),
                },
                "2" => end(s, screen::cancelled()),
                _ => {}
            },
            Step::Ended => {}
        }
        Ok(())
    }

    /// The vote a confirmation opens, priced by the checkout rules (campaign running, nominee
    /// active, fee); a refusal is the screen that ends the session.
    async fn vote(
        &self,
        s: &UssdSession,
        participant_id: &str,
        votes: i64,
    ) -> Result<(crate::store::payments::NewTransaction, Nominee), String> {
        let (p, c, n) = self.nominee(participant_id).await.map_err(|_| screen::failed())?;
        if p.status != ParticipantStatus::Active {
            return Err(screen::not_votable_end(&p.name));
        }
        let order = Order {
            kind: TransactionType::Vote,
            campaign_id: c.id.clone(),
            ticket_type_id: None,
            participant_id: Some(p.id.clone()),
            quantity: votes,
            amount: Some(n.vote_price.saturating_mul(votes)),
            email: ussd::email_of(&s.msisdn),
            phone: Some(s.msisdn.clone()),
            full_name: None,
            callback_url: None,
            channel: "ussd",
            metadata: json!({
                "campaignId": c.id,
                "participantId": p.id,
                "ussd": {"gateway": s.gateway, "sessionId": s.session_id, "network": s.network},
            }),
            description: Some(format!("{votes} vote(s) for {} by USSD", p.name)),
            attendees: Vec::new(),
            campaign_field: "campaignId",
            quantity_field: "votes",
            attendees_field: "attendees",
        };
        let (mut t, settings) = match prepare(self.state, &self.account.id, order).await {
            Ok(prepared) => prepared,
            Err(e) => {
                tracing::info!(error = %e, "a USSD vote was refused at confirmation");
                return Err(screen::failed());
            }
        };
        let provider = self
            .settings
            .provider
            .filter(|p| p.can_push() && credentials(self.state, &self.account.id, &settings, *p).is_some())
            .or_else(|| routes(self.state, &self.account.id, &settings, "ussd").first().map(|r| r.provider));
        let Some(provider) = provider else {
            tracing::warn!(account = %self.account.id, "a USSD vote found no configured payment provider");
            return Err(screen::failed());
        };
        t.provider = Some(provider.as_str().to_string());
        Ok((t, n))
    }

    /// Saves the session with its effect in one transaction; a session saved by another request
    /// since it was read shows that one's screen instead.
    async fn finish(self, mut s: UssdSession, read_at: Option<i64>, now: i64) -> FlowResult<Reply> {
        s.updated_at = now.max(read_at.unwrap_or(0) + 1);
        let mut tx = self.state.store.begin().await?;
        match &self.effect {
            Some(Effect::Vote(t)) => {
                open_in(&mut tx, t, now + first_poll_ms(self.state), now).await?;
                jobs::enqueue(&mut tx, queue::MOMO, &t.reference, now, now).await?;
            }
            Some(Effect::Prompt(reference)) => jobs::enqueue(&mut tx, queue::MOMO, reference, now, now).await?,
            Some(Effect::Cancel(reference)) => {
                release_in(&mut tx, reference, TxStatus::Abandoned, now).await?;
                jobs::finish(&mut tx, queue::MOMO, reference).await?;
            }
            None => {}
        }
        if !save(&mut tx, &s, read_at).await? {
            drop(tx);
            let winner = self.state.store.ussd_session(&s.account_id, &s.gateway, &s.session_id).await?;
            return Ok(match winner {
                Some(w) => Reply { screen: w.screen, end: w.ended },
                None => Reply::end(screen::failed()),
            });
        }
        tx.commit().await?;
        Ok(Reply { screen: s.screen, end: s.ended })
    }
}

/// The `momo_charge` worker's step (D17.21): asks the vote's provider to send the mobile-money
/// prompt, keyed by the transaction reference, so a retried call never charges twice (a
/// provider that already has the reference refuses it: the charge stands). A vote no longer
/// pending (paid, cancelled, expired) is not charged. The votes are credited by the fulfilment
/// flow when the provider's callback or the verify poll confirms the payment.
pub async fn charge(state: &AppState, reference: &str, step_ms: i64) -> FlowResult<Next> {
    let Some(t) = state.store.transaction_by_reference(reference).await? else {
        return Ok(Next::Done);
    };
    if t.status != TxStatus::Pending || t.credited {
        return Ok(Next::Done);
    }
    let Some(provider) = t.provider.as_deref().and_then(ProviderId::parse) else {
        release(state, reference, TxStatus::Failed, now_ms()).await?;
        return Ok(Next::Done);
    };
    let Some(creds) = credentials_now(state, &t.account_id, provider).await? else {
        tracing::warn!(%reference, provider = provider.as_str(), "the provider of a USSD vote is no longer configured; failed");
        release(state, reference, TxStatus::Failed, now_ms()).await?;
        return Ok(Next::Done);
    };
    let msisdn = t.phone.clone().unwrap_or_default();
    let network = t
        .metadata
        .pointer("/ussd/network")
        .and_then(Value::as_str)
        .and_then(Network::from_gateway)
        .or_else(|| Network::from_msisdn(&msisdn))
        .unwrap_or(Network::Mtn);
    let req = MobileMoneyCharge {
        reference,
        amount: t.amount,
        currency: &t.currency,
        email: &t.email,
        msisdn: &msisdn,
        network: network.as_str(),
        name: t.full_name.as_deref(),
        description: t.description.as_deref(),
        metadata: &t.metadata,
    };
    match adapter(provider).charge_mobile_money(&state.outbound, &creds, &req).await {
        Ok(()) | Err(ProviderError::Duplicate) => {
            // The prompt went to this handset: a refund sends the money back there (D18.3).
            let facts = ChargeFacts {
                method: Some("mobile_money"),
                payer: Some(&msisdn),
                network: Some(network.as_str()),
                ..ChargeFacts::default()
            };
            state.store.note_charge(reference, facts).await?;
            Ok(Next::Done)
        }
        Err(e) if e.is_transient() => Ok(Next::Later {
            delay_ms: retry_delay_ms(step_ms),
            not_after: Some(t.hold_expires_at.max(now_ms())),
            error: Some(e.to_string()),
        }),
        Err(e) => {
            tracing::warn!(%reference, error = %e, "the provider refused a USSD vote's mobile-money charge; failed");
            release(state, reference, TxStatus::Failed, now_ms()).await?;
            Ok(Next::Done)
        }
    }
}
