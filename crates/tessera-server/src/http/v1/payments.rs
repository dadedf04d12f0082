//! Payment routes (spec "POST payments/initialize", payments/verify; D5, D12.1–3, D16.1–6,
//! D16.24): initialization in both forms with server-side prices and fees, and the reads.
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::campaign_filter;
use super::tickets::TicketOut;
use crate::domain::campaigns::{CampaignStatus, CampaignType};
use crate::domain::check::{self, Check};
use crate::domain::is_uuid;
use crate::domain::money::{from_ghs, to_ghs};
use crate::domain::payments::{new_reference, parse_channel, TransactionType, TxStatus, CURRENCY};
use crate::domain::time::{now_ms, rfc3339};
use crate::http::envelope::{ApiResponse, Envelope, ListEnvelope};
use crate::http::error::{ApiError, ApiResult, Detail};
use crate::http::extract::{scope, ApiJson, Caller, ListFilters, ListQuery, Signed};
use crate::http::openapi::{BodyErrors, Conflict, NotFound, ProviderErrors, QueryErrors, SignedErrors};
use crate::payments::{confirm, fee_policy, payments_settings, routes, ConfirmError};
use crate::providers::payments::{adapter, ChargeRequest, ProviderError};
use crate::state::AppState;
use crate::store::payments::{NewTransaction, Transaction, TransactionQuery};
use crate::workers::charges::first_poll_ms;

/// Form 1 of `POST /payments/initialize`: a ticket checkout priced by the server.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckoutIn {
    /// An approved ticketing campaign of the account, inside its dates.
    #[schema(format = "uuid")]
    pub campaign_id: Option<String>,
    /// An active ticket type of that campaign.
    #[schema(format = "uuid")]
    pub ticket_id: Option<String>,
    /// The buyer's e-mail: tickets and the confirmation go there.
    #[schema(format = Email)]
    pub email: Option<String>,
    /// 1 to the ticket type's max_per_person.
    #[schema(value_type = i64, minimum = 1, maximum = 100)]
    pub quantity: Option<Value>,
    /// The attendee's name, printed on the tickets (1–255 characters).
    pub full_name: Option<String>,
    /// Where the checkout page sends the buyer back: https on an approved domain of the account.
    #[serde(rename = "callbackUrl")]
    #[schema(format = "uri")]
    pub callback_url: Option<String>,
    /// Free-form integration data (≤ 16 KiB).
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

/// Form 2 of `POST /payments/initialize`: a routed payment for a vote, a donation or tickets.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RoutedIn {
    /// `vote`, `donation` or `ticket`.
    pub transaction_type: Option<String>,
    /// GHS, > 0, at most 2 decimals: the price (votes × vote_price, the donation, or
    /// quantity × ticket price).
    #[schema(value_type = f64, minimum = 0.01, multiple_of = 0.01)]
    pub amount: Option<Value>,
    #[schema(format = Email)]
    pub email: Option<String>,
    /// E.164, or a Ghana number 0XXXXXXXXX.
    pub phone_number: Option<String>,
    /// https on an approved domain of the account.
    #[schema(format = "uri")]
    pub callback_url: Option<String>,
    /// `web` (default), `ussd`, `telegram`, `whatsapp`, `withdrawal`: picks the provider.
    pub channel: Option<String>,
    /// vote: `campaignId`, `participantId`; donation: `campaignId`; ticket: `campaignId`,
    /// `ticketTypeId`, `quantity` (default 1), `full_name`. Other keys are kept.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// Up to 500 characters.
    pub description: Option<String>,
}

/// Either form; a body with `transactionType` is Form 2, one with `campaign_id` and
/// `ticket_id` Form 1 (D5.1).
#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum InitializeIn {
    Routed(RoutedIn),
    Checkout(CheckoutIn),
}

#[derive(Debug, Serialize, ToSchema)]
pub struct GatewayMeta {
    pub payment_provider: Option<String>,
}

/// What initialization answers: Form 1's fields and Form 2's together.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeOut {
    /// Tessera's reference, also the provider's.
    pub reference: String,
    /// `pending` until the provider confirms; `success` at once for a free purchase.
    pub status: String,
    pub transaction_type: String,
    /// `provider_a` …, or null for a free purchase.
    pub provider: Option<String>,
    /// Where the customer pays (null for a free purchase).
    pub authorization_url: Option<String>,
    pub access_code: Option<String>,
    /// GHS the customer is charged.
    #[schema(value_type = f64)]
    pub amount: Value,
    /// GHS of fee on the price.
    #[schema(value_type = f64)]
    pub fees: Value,
    pub currency: String,
    /// When the inventory hold ends (null once settled).
    pub expires_at: Option<String>,
    pub gateway_meta: GatewayMeta,
    /// Tickets issued at once (free purchases); empty otherwise.
    pub tickets: Vec<TicketOut>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VotesOut {
    pub participant_id: String,
    pub count: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DonationOut {
    pub id: String,
}

/// A transaction (D12.1).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentOut {
    pub reference: String,
    pub transaction_type: String,
    /// `pending`, `success`, `failed`, `abandoned`.
    pub status: String,
    /// GHS charged.
    #[schema(value_type = f64)]
    pub amount: Value,
    /// GHS of fee.
    #[schema(value_type = f64)]
    pub fees: Value,
    /// amount − fees.
    #[schema(value_type = f64)]
    pub net: Value,
    pub currency: String,
    pub provider: Option<String>,
    pub channel: String,
    pub email: String,
    pub campaign_id: String,
    pub ticket_type_id: Option<String>,
    /// Tickets bought, or votes bought.
    pub quantity: i64,
    pub authorization_url: Option<String>,
    #[schema(value_type = Object)]
    pub metadata: Value,
    pub created_at: String,
    pub paid_at: Option<String>,
    pub expires_at: String,
    /// The provider reported another amount or currency: not credited, not fulfilled.
    pub mismatch: bool,
    /// Paid after its hold expired (D16.4).
    pub paid_late: bool,
    pub tickets: Vec<TicketOut>,
    pub votes: Option<VotesOut>,
    pub donation: Option<DonationOut>,
}

fn payment_out(t: Transaction, tickets: Vec<TicketOut>, donation: Option<String>) -> PaymentOut {
    let votes = (t.transaction_type == "vote").then(|| VotesOut {
        participant_id: t.participant_id.clone().unwrap_or_default(),
        count: if t.fulfilled { t.quantity } else { 0 },
    });
    PaymentOut {
        amount: to_ghs(t.amount),
        fees: to_ghs(t.fees),
        net: to_ghs(t.amount - t.fees),
        created_at: rfc3339(t.created_at),
        paid_at: t.paid_at.map(rfc3339),
        expires_at: rfc3339(t.hold_expires_at),
        donation: donation.map(|id| DonationOut { id }),
        votes,
        tickets,
        reference: t.reference,
        transaction_type: t.transaction_type,
        status: t.status,
        currency: t.currency,
        provider: t.provider,
        channel: t.channel,
        email: t.email,
        campaign_id: t.campaign_id,
        ticket_type_id: t.ticket_type_id,
        quantity: t.quantity,
        authorization_url: t.authorization_url,
        metadata: t.metadata,
        mismatch: t.mismatch,
        paid_late: t.paid_late,
    }
}

/// A transaction with what it fulfilled, as the reads show it.
async fn read_payment(state: &AppState, t: Transaction) -> Result<PaymentOut, ApiError> {
    let tickets = state.store.tickets_of(&t.reference).await?.into_iter().map(Into::into).collect();
    let donation = if t.transaction_type == "donation" { state.store.donation_of(&t.reference).await? } else { None };
    Ok(payment_out(t, tickets, donation))
}

/// A validated order, before the catalogue prices it.
struct Order {
    kind: TransactionType,
    campaign_id: String,
    ticket_type_id: Option<String>,
    participant_id: Option<String>,
    /// Tickets asked for.
    quantity: i64,
    /// Form 2's amount (the price), pesewas.
    amount: Option<i64>,
    email: String,
    phone: Option<String>,
    full_name: Option<String>,
    callback_url: Option<String>,
    channel: &'static str,
    metadata: Value,
    description: Option<String>,
    /// How the body named the campaign and the quantity, for error details.
    campaign_field: &'static str,
    quantity_field: &'static str,
}

fn required<'a>(check: &mut Check, field: &str, v: &'a Option<String>) -> Option<&'a str> {
    if v.is_none() {
        check.fail(field, "is required");
    }
    v.as_deref()
}

fn uuid_field(check: &mut Check, field: &str, v: Option<&str>) -> Option<String> {
    match v {
        Some(s) if is_uuid(s) => Some(s.to_string()),
        Some(_) => {
            check.fail(field, "must be a UUID");
            None
        }
        None => None,
    }
}

fn quantity(check: &mut Check, field: &str, v: Option<&Value>, default: Option<i64>) -> i64 {
    match (v, default) {
        (None, Some(d)) => d,
        (None, None) => {
            check.fail(field, "is required");
            1
        }
        (Some(v), _) => match v.as_i64() {
            Some(n) if (1..=100).contains(&n) => n,
            _ => {
                check.fail(field, "must be a whole number from 1 to 100");
                1
            }
        },
    }
}

fn metadata(check: &mut Check, v: &Option<Value>) -> Value {
    match v {
        None => Value::Object(Default::default()),
        Some(m) => {
            check.take(check::free_object("metadata", m));
            m.clone()
        }
    }
}

fn full_name(check: &mut Check, field: &str, v: Option<&Value>) -> Option<String> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => check.take(check::text(field, s, 1, 255)),
        Some(_) => {
            check.fail(field, "must be a string");
            None
        }
    }
}

fn checkout(body: Value) -> Result<Order, ApiError> {
    let f: CheckoutIn = crate::http::extract::parse_json_value(body)?;
    let mut check = Check::new();
    let asked = required(&mut check, "campaign_id", &f.campaign_id);
    let campaign_id = uuid_field(&mut check, "campaign_id", asked);
    let asked = required(&mut check, "ticket_id", &f.ticket_id);
    let ticket_type_id = uuid_field(&mut check, "ticket_id", asked);
    let email = required(&mut check, "email", &f.email).and_then(|e| check.take(check::email("email", e)));
    let quantity = quantity(&mut check, "quantity", f.quantity.as_ref(), None);
    let full_name = full_name(&mut check, "full_name", f.full_name.as_ref().map(|s| Value::String(s.clone())).as_ref());
    let callback_url = f.callback_url.as_deref().and_then(|u| check.take(check::url("callbackUrl", u, false)));
    let metadata = metadata(&mut check, &f.metadata);
    check.finish()?;
    Ok(Order {
        kind: TransactionType::Ticket,
        campaign_id: campaign_id.unwrap_or_default(),
        ticket_type_id,
        participant_id: None,
        quantity,
        amount: None,
        email: email.unwrap_or_default(),
        phone: None,
        full_name,
        callback_url,
        channel: "web",
        metadata,
        description: None,
        campaign_field: "campaign_id",
        quantity_field: "quantity",
    })
}

fn routed(body: Value) -> Result<Order, ApiError> {
    let f: RoutedIn = crate::http::extract::parse_json_value(body)?;
    let mut check = Check::new();
    let kind = required(&mut check, "transactionType", &f.transaction_type)
        .and_then(|t| check.take(TransactionType::parse("transactionType", t)));
    let amount = match &f.amount {
        None => {
            check.fail("amount", "is required");
            None
        }
        Some(v) => match check.take(from_ghs("amount", v)) {
            Some(0) => {
                check.fail("amount", "must be greater than 0");
                None
            }
            other => other,
        },
    };
    let email = required(&mut check, "email", &f.email).and_then(|e| check.take(check::email("email", e)));
    let phone =
        required(&mut check, "phoneNumber", &f.phone_number).and_then(|p| check.take(check::phone("phoneNumber", p)));
    let callback_url = required(&mut check, "callbackUrl", &f.callback_url)
        .and_then(|u| check.take(check::url("callbackUrl", u, false)));
    let channel = match f.channel.as_deref() {
        None => Some("web"),
        Some(c) => check.take(parse_channel("channel", c)),
    };
    let description = f.description.as_deref().and_then(|d| check.take(check::text("description", d, 0, 500)));
    let metadata = metadata(&mut check, &f.metadata);
    let meta = |k: &str| metadata.get(k).and_then(Value::as_str).map(str::to_string);
    let campaign_id = meta("campaignId");
    if campaign_id.is_none() {
        check.fail("metadata.campaignId", "is required");
    }
    let campaign_id = uuid_field(&mut check, "metadata.campaignId", campaign_id.as_deref());
    let (mut ticket_type_id, mut participant_id, mut quantity_asked, mut name) = (None, None, 1, None);
    match kind {
        Some(TransactionType::Vote) => {
            let p = meta("participantId");
            if p.is_none() {
                check.fail("metadata.participantId", "is required for a vote");
            }
            participant_id = uuid_field(&mut check, "metadata.participantId", p.as_deref());
        }
        Some(TransactionType::Ticket) => {
            let t = meta("ticketTypeId");
            if t.is_none() {
                check.fail("metadata.ticketTypeId", "is required for a ticket");
            }
            ticket_type_id = uuid_field(&mut check, "metadata.ticketTypeId", t.as_deref());
            quantity_asked = quantity(&mut check, "metadata.quantity", metadata.get("quantity"), Some(1));
            name = full_name(&mut check, "metadata.full_name", metadata.get("full_name"));
        }
        _ => {}
    }
    check.finish()?;
    Ok(Order {
        kind: kind.unwrap_or(TransactionType::Donation),
        campaign_id: campaign_id.unwrap_or_default(),
        ticket_type_id,
        participant_id,
        quantity: quantity_asked,
        amount,
        email: email.unwrap_or_default(),
        phone,
        full_name: name,
        callback_url,
        channel: channel.unwrap_or("web"),
        metadata,
        description,
        campaign_field: "metadata.campaignId",
        quantity_field: "metadata.quantity",
    })
}

/// A `callbackUrl` must be https on an approved domain of the account; http and loopback are
/// allowed only where the platform allows private endpoints (dev and demo). No open redirect.
async fn check_callback(state: &AppState, caller: &Caller, url: &str) -> Result<(), ApiError> {
    let bad = || ApiError::field("callbackUrl", "must be an https URL on an approved domain of the account");
    let parsed = url::Url::parse(url).map_err(|_| bad())?;
    let host = parsed.host_str().ok_or_else(bad)?.trim_end_matches('.').to_ascii_lowercase();
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(bad());
    }
    let local = matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]");
    if state.config.security.allow_private_endpoints && local && matches!(parsed.scheme(), "http" | "https") {
        return Ok(());
    }
    if parsed.scheme() != "https" {
        return Err(bad());
    }
    let view = state.directory.account_view(&caller.account_id).await?;
    if view.domains.iter().any(|d| d.verified && d.hostname.eq_ignore_ascii_case(&host)) {
        Ok(())
    } else {
        Err(bad())
    }
}

/// What the catalogue says an order costs and fulfils.
struct Priced {
    price: i64,
    quantity: i64,
}

fn field_error(field: &str, message: &str) -> ApiError {
    ApiError::field(field, message)
}

/// Prices an order against the catalogue (D5.2–3): campaign approved and running, of the right
/// type; ticket type active and of that campaign; participant of that campaign; amounts exact.
async fn price(state: &AppState, account: &str, o: &Order) -> Result<Priced, ApiError> {
    let campaign = state.store.campaign(account, &o.campaign_id).await?;
    let wanted = match o.kind {
        TransactionType::Ticket => CampaignType::Ticketing,
        TransactionType::Vote => CampaignType::Voting,
        TransactionType::Donation => CampaignType::Donation,
    };
    if campaign.campaign_type != wanted {
        return Err(field_error(o.campaign_field, &format!("must be a {} campaign", wanted.as_str())));
    }
    if campaign.status != CampaignStatus::Approved {
        return Err(ApiError::conflict("the campaign is not approved"));
    }
    let now = now_ms();
    if now < campaign.start_date || now > campaign.end_date {
        return Err(ApiError::conflict("the campaign is not running (outside its start and end dates)"));
    }
    match o.kind {
        TransactionType::Ticket => {
            let id = o.ticket_type_id.as_deref().unwrap_or_default();
            let tt = state.store.ticket_type(account, id).await?;
            if tt.campaign_id != campaign.id {
                return Err(ApiError::not_found("ticket type"));
            }
            if tt.status != crate::domain::ticket_types::TicketTypeStatus::Active {
                return Err(ApiError::conflict("this ticket type is not on sale"));
            }
            if o.quantity > tt.max_per_person {
                return Err(field_error(
                    o.quantity_field,
                    &format!("must be at most {} (max_per_person)", tt.max_per_person),
                ));
            }
            let price = tt.price * o.quantity;
            if o.amount.is_some_and(|a| a != price) {
                return Err(field_error("amount", &format!("must equal quantity × price = {}", to_ghs(price))));
            }
            Ok(Priced { price, quantity: o.quantity })
        }
        TransactionType::Vote => {
            let id = o.participant_id.as_deref().unwrap_or_default();
            let p = state.store.participant(account, id).await?;
            if p.campaign_id != campaign.id {
                return Err(ApiError::not_found("participant"));
            }
            if p.status != crate::domain::participants::ParticipantStatus::Active {
                return Err(ApiError::conflict("this participant does not take votes"));
            }
            let vote_price = campaign
                .vote_price
                .filter(|v| *v > 0)
                .ok_or_else(|| ApiError::conflict("the campaign has no vote_price"))?;
            let amount = o.amount.unwrap_or_default();
            if amount % vote_price != 0 {
                return Err(field_error(
                    "amount",
                    &format!("must be a whole multiple of the vote price {}", to_ghs(vote_price)),
                ));
            }
            Ok(Priced { price: amount, quantity: amount / vote_price })
        }
        TransactionType::Donation => Ok(Priced { price: o.amount.unwrap_or_default(), quantity: 1 }),
    }
}

/// POST /api/white-label/v1/payments/initialize — Signed — payments:write
#[utoipa::path(
    post, path = "/api/white-label/v1/payments/initialize", tag = "payments", operation_id = "payments_initialize",
    security(("signed" = [])),
    request_body(content = InitializeIn, description = "Form 1 (ticket checkout) or Form 2 (routed payment)",
        example = json!({"transactionType": "vote", "amount": 5, "email": "fan@example.com", "phoneNumber": "0241234567",
            "callbackUrl": "https://events.example.com/thanks", "metadata": {"campaignId": "0190…", "participantId": "0190…"}})),
    responses(
        (status = 200, description = "Initialized (pending), or completed at once when free. 404: campaign, ticket type or \
            participant not in this account. 409: campaign not approved or not running, ticket type not on sale \
            (`conflict`), or not enough seats (`sold_out`)", body = Envelope<InitializeOut>),
        SignedErrors, BodyErrors, NotFound, Conflict, ProviderErrors,
    )
)]
pub async fn initialize(
    State(state): State<AppState>,
    caller: Signed<scope::PaymentsWrite>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<InitializeOut> {
    let order = if body.get("transactionType").is_some() {
        routed(body)?
    } else if body.get("campaign_id").is_some() || body.get("ticket_id").is_some() {
        checkout(body)?
    } else {
        return Err(ApiError::validation(vec![Detail {
            field: "transactionType".into(),
            message: "is required (or campaign_id and ticket_id for a ticket checkout)".into(),
        }]));
    };
    if let Some(url) = &order.callback_url {
        check_callback(&state, &caller, url).await?;
    }
    let account: &str = &caller.account_id;
    let priced = price(&state, account, &order).await?;
    let settings = payments_settings(&state, account).await?;
    let quote = fee_policy(&state, &settings).quote(priced.price);
    let now = now_ms();
    let mut t = NewTransaction {
        reference: new_reference(),
        account_id: account.to_string(),
        transaction_type: order.kind,
        amount: quote.amount,
        fees: quote.fees,
        price: quote.price,
        currency: CURRENCY.to_string(),
        provider: None,
        channel: order.channel.to_string(),
        email: order.email,
        phone: order.phone,
        full_name: order.full_name,
        callback_url: order.callback_url,
        description: order.description,
        campaign_id: order.campaign_id,
        ticket_type_id: order.ticket_type_id,
        participant_id: order.participant_id,
        quantity: priced.quantity,
        metadata: order.metadata,
        hold_expires_at: now
            + i64::try_from(state.config.payments.hold_seconds.saturating_mul(1000)).unwrap_or(i64::MAX / 2),
    };
    if quote.amount == 0 {
        state.store.complete_free(&t, now).await?;
        let tickets = state.store.tickets_of(&t.reference).await?.into_iter().map(Into::into).collect();
        return Ok(ApiResponse::ok(InitializeOut {
            reference: t.reference,
            status: TxStatus::Success.as_str().into(),
            transaction_type: order.kind.as_str().into(),
            provider: None,
            authorization_url: None,
            access_code: None,
            amount: to_ghs(0),
            fees: to_ghs(0),
            currency: CURRENCY.into(),
            expires_at: None,
            gateway_meta: GatewayMeta { payment_provider: None },
            tickets,
        }));
    }
    let candidates = routes(&state, account, &settings, order.channel);
    let Some(first) = candidates.first() else {
        return Err(ApiError::provider_unavailable("no payment provider is configured for this account"));
    };
    t.provider = Some(first.provider.as_str().to_string());
    state.store.open_transaction(&t, now + first_poll_ms(&state), now).await?;
    let request = ChargeRequest {
        reference: &t.reference,
        amount: t.amount,
        currency: CURRENCY,
        email: &t.email,
        callback_url: t.callback_url.as_deref(),
        metadata: &t.metadata,
    };
    let mut last_error = None;
    for route in &candidates {
        match adapter(route.provider).initialize(&state.outbound, &route.credentials, &request).await {
            Ok(init) => {
                let provider = route.provider.as_str();
                state
                    .store
                    .attach_charge(&t.reference, provider, &init.authorization_url, &init.access_code, now_ms())
                    .await?;
                return Ok(ApiResponse::ok(InitializeOut {
                    reference: t.reference.clone(),
                    status: TxStatus::Pending.as_str().into(),
                    transaction_type: order.kind.as_str().into(),
                    provider: Some(provider.into()),
                    authorization_url: Some(init.authorization_url),
                    access_code: Some(init.access_code),
                    amount: to_ghs(t.amount),
                    fees: to_ghs(t.fees),
                    currency: CURRENCY.into(),
                    expires_at: Some(rfc3339(t.hold_expires_at)),
                    gateway_meta: GatewayMeta { payment_provider: Some(provider.into()) },
                    tickets: Vec::new(),
                }));
            }
            Err(e) => {
                tracing::warn!(provider = route.provider.as_str(), error = %e, "charge initialization failed");
                let transient = e.is_transient();
                last_error = Some(e);
                if !transient {
                    break;
                }
            }
        }
    }
    state.store.drop_transaction(&t.reference, now_ms()).await?;
    Err(ApiError::provider_unavailable(match last_error {
        Some(ProviderError::Unreachable(_)) | None => {
            "no payment provider could be reached; nothing was reserved".to_string()
        }
        Some(e) => format!("the payment provider refused the charge ({e}); nothing was reserved"),
    }))
}

/// Body of `POST /payments/verify`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyIn {
    /// The reference initialization returned.
    pub reference: Option<String>,
}

/// POST /api/white-label/v1/payments/verify — Signed — payments:write
#[utoipa::path(
    post, path = "/api/white-label/v1/payments/verify", tag = "payments", operation_id = "payments_verify",
    security(("signed" = [])),
    request_body(content = VerifyIn, example = json!({"reference": "tsr_01hz…"})),
    responses(
        (status = 200, description = "The transaction after asking its provider (D5.7)", body = Envelope<PaymentOut>),
        SignedErrors, BodyErrors, NotFound, ProviderErrors,
    )
)]
pub async fn verify(
    State(state): State<AppState>,
    caller: Signed<scope::PaymentsWrite>,
    ApiJson(body): ApiJson<VerifyIn>,
) -> ApiResult<PaymentOut> {
    let Some(reference) = body.reference else {
        return Err(ApiError::field("reference", "is required"));
    };
    let t = state.store.transaction(&caller.account_id, &reference).await?;
    match confirm(&state, &t).await {
        Ok(_) => {}
        Err(ConfirmError::Store(e)) => return Err(e.into()),
        Err(e) => return Err(ApiError::provider_unavailable(format!("could not verify with the provider: {e}"))),
    }
    let t = state.store.transaction(&caller.account_id, &reference).await?;
    Ok(ApiResponse::ok(read_payment(&state, t).await?))
}

/// GET /api/white-label/v1/payments/{reference} — Signed — payments:write
#[utoipa::path(
    get, path = "/api/white-label/v1/payments/{reference}", tag = "payments", operation_id = "payments_show",
    security(("signed" = [])),
    params(("reference" = String, Path, description = "The transaction reference")),
    responses((status = 200, description = "The transaction and what it fulfilled", body = Envelope<PaymentOut>), SignedErrors, NotFound)
)]
pub async fn show(
    State(state): State<AppState>,
    caller: Signed<scope::PaymentsWrite>,
    Path(reference): Path<String>,
) -> ApiResult<PaymentOut> {
    let t = state.store.transaction(&caller.account_id, &reference).await?;
    Ok(ApiResponse::ok(read_payment(&state, t).await?))
}

fn status_schema() -> utoipa::openapi::schema::Object {
    crate::http::openapi::string_enum(&["pending", "success", "failed", "abandoned"], "A transaction status (D5.5).")
}

fn type_schema() -> utoipa::openapi::schema::Object {
    crate::http::openapi::string_enum(&["vote", "donation", "ticket"], "A transaction type.")
}

/// The filters of `GET /payments`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct PaymentFilters {
    /// One transaction status.
    #[param(schema_with = status_schema)]
    pub status: Option<String>,
    /// Only this campaign's payments.
    #[param(value_type = Option<String>, format = "uuid")]
    pub campaign_id: Option<String>,
    /// One transaction type.
    #[serde(rename = "type")]
    #[param(rename = "type", schema_with = type_schema)]
    pub kind: Option<String>,
}

impl ListFilters for PaymentFilters {
    type Parsed = (Option<TxStatus>, Option<String>, Option<TransactionType>);
    fn parse(self, check: &mut Check) -> Self::Parsed {
        let status = self.status.and_then(|s| check.take(TxStatus::parse("status", &s)));
        let kind = self.kind.and_then(|k| check.take(TransactionType::parse("type", &k)));
        (status, self.campaign_id, kind)
    }
}

/// GET /api/white-label/v1/payments — Signed — payments:write
#[utoipa::path(
    get, path = "/api/white-label/v1/payments", tag = "payments", operation_id = "payments_list",
    security(("signed" = [])),
    params(ListQuery<PaymentFilters>),
    responses(
        (status = 200, description = "The account's payments, newest first; 404 when campaignId is not a campaign of this account", body = ListEnvelope<PaymentOut>),
        SignedErrors, QueryErrors, NotFound,
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Signed<scope::PaymentsWrite>,
    q: ListQuery<PaymentFilters>,
) -> ApiResult<Vec<PaymentOut>> {
    let (status, campaign_id, transaction_type) = q.filters;
    campaign_filter(&state, &caller.account_id, campaign_id.as_deref()).await?;
    let (page, limit) = q.page.bounds();
    let query = TransactionQuery { status, campaign_id, transaction_type, page, limit };
    let (items, total) = state.store.list_transactions(&caller.account_id, &query).await?;
    // One read for the page's tickets and one for its donations, whatever the page's size.
    let references: Vec<String> = items.iter().map(|t| t.reference.clone()).collect();
    let mut tickets = state.store.tickets_of_many(&references).await?;
    let mut donations = state.store.donations_of_many(&references).await?;
    let out = items
        .into_iter()
        .map(|t| {
            let mine = tickets.remove(&t.reference).unwrap_or_default().into_iter().map(Into::into).collect();
            let donation = donations.remove(&t.reference);
            payment_out(t, mine, donation)
        })
        .collect();
    Ok(ApiResponse::list(out, q.page.pagination(total)))
}
