//! Payment routes (spec "POST payments/initialize", payments/verify; D5, D12.1–3, D16.1–6,
//! D16.24): initialization in both forms with server-side prices and fees, and the reads.
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::campaign_filter;
use crate::domain::check::Check;
use crate::domain::money::to_ghs;
use crate::domain::payments::{parse_checkout, parse_routed, TransactionType, TxStatus, CURRENCY};
use crate::domain::time::rfc3339;
use crate::flows::{checkout, fulfilment};
use crate::http::envelope::{ApiResponse, Envelope, ListEnvelope};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{parse_json_value, scope, ApiJson, ListFilters, ListQuery, Signed};
use crate::http::openapi::{
    BodyErrors, Conflict, ModuleSignedErrors, NotFound, ProviderErrors, QueryErrors, SignedErrors,
};
use crate::state::AppState;
use crate::store::payments::{Transaction, TransactionQuery};
pub use crate::views::payments::{payment_out, DonationOut, PaymentOut, VotesOut};
use crate::views::tickets::TicketOut;

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
    /// One attendee per ticket (exactly `quantity` items), answering the ticket type's
    /// `required_attendee_fields` (D17.12).
    #[schema(value_type = Option<Vec<AttendeeIn>>)]
    pub attendees: Option<Value>,
}

/// Who one ticket is for (D17.12): name and e-mail default to the buyer's.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct AttendeeIn {
    /// Printed on this ticket (1–255 characters); default the buyer's `full_name`.
    pub full_name: Option<String>,
    /// This ticket's holder (my-tickets); default the buyer's e-mail.
    #[schema(format = Email)]
    pub email: Option<String>,
    /// `{<field key>: <string>}`: every `required: true` field of the ticket type answered,
    /// `type: email` fields with an e-mail address, no other keys.
    pub answers: std::collections::BTreeMap<String, String>,
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
    /// `ticketTypeId`, `quantity` (default 1), `full_name`, `attendees` (as Form 1's
    /// `attendees`, D17.12). Other keys are kept.
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

/// A transaction with what it fulfilled, as the reads show it.
async fn read_payment(state: &AppState, t: Transaction) -> Result<PaymentOut, ApiError> {
    let tickets = state.store.tickets_of(&t.reference).await?.into_iter().map(Into::into).collect();
    let donation = if t.transaction_type == TransactionType::Donation {
        state.store.donation_of(&t.reference).await?
    } else {
        None
    };
    Ok(payment_out(t, tickets, donation))
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
            (`conflict`), not enough seats (`sold_out`), or a hidden or eliminated participant \
            (`participant_not_votable`, D17.15). 403 `module_disabled`: the account turned the payment's module off \
            (D17.14)", body = Envelope<InitializeOut>),
        ModuleSignedErrors, BodyErrors, NotFound, Conflict, ProviderErrors,
    )
)]
pub async fn initialize(
    State(state): State<AppState>,
    caller: Signed<scope::PaymentsWrite>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<InitializeOut> {
    let order = if body.get("transactionType").is_some() {
        parse_json_value::<RoutedIn>(body.clone())?;
        parse_routed(&body)?
    } else if body.get("campaign_id").is_some() || body.get("ticket_id").is_some() {
        parse_json_value::<CheckoutIn>(body.clone())?;
        parse_checkout(&body)?
    } else {
        return Err(ApiError::field(
            "transactionType",
            "is required (or campaign_id and ticket_id for a ticket checkout)",
        ));
    };
    let done = checkout::initialize(&state, &caller.account_id, order).await?;
    let provider = done.provider.map(str::to_string);
    Ok(ApiResponse::ok(InitializeOut {
        reference: done.reference,
        status: done.status.as_str().into(),
        transaction_type: done.kind.as_str().into(),
        provider: provider.clone(),
        authorization_url: done.authorization_url,
        access_code: done.access_code,
        amount: to_ghs(done.amount),
        fees: to_ghs(done.fees),
        currency: CURRENCY.into(),
        expires_at: done.expires_at.map(rfc3339),
        gateway_meta: GatewayMeta { payment_provider: provider },
        tickets: done.tickets.into_iter().map(Into::into).collect(),
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
    let t = fulfilment::verify(&state, &caller.account_id, &reference).await?;
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
