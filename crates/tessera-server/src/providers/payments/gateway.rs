//! The gateway protocol of docs/providers.md, client side, spoken by `provider_b` and
//! `provider_c` (D11.1): JSON with a Bearer secret and pesewas; `POST /charges`,
//! `GET /charges/:reference` (a mobile-money charge is `POST /charges` with `channel:
//! mobile_money, phone, network`, D17.21), `POST /transfers` (409 on a reused reference, D16.13),
//! `GET /transfers/:reference`, `POST /refunds {reference, transaction, amount}` (the refund id
//! is its reference: a second POST with it answers the refund already made, D17.36) and
//! `GET /refunds/:id`; errors `{"error": {"code", "message"}}`. The two providers differ
//! only in their callback signature header (D6.1), both hex HMAC-SHA256 of the raw body.
use reqwest::Method;
use serde_json::{json, Value};

use super::wire::{self, amount_at, seg, str_at, Answer};
use super::*;

/// `pending | success | failed`; anything newer counts as not settled.
pub fn map_status(s: &str) -> RemoteStatus {
    match s {
        "success" => RemoteStatus::Success,
        "failed" => RemoteStatus::Failed,
        _ => RemoteStatus::Pending,
    }
}

fn error_message(a: &Answer) -> Option<&str> {
    a.body.get("error").and_then(|e| str_at(e, "message"))
}

/// The body of a 2xx; 404 → NotFound, 409 → Duplicate, other 4xx → Rejected.
fn ok_body(a: Answer) -> ProviderResult<Value> {
    match a.status {
        200..=299 if a.body.is_object() => Ok(a.body),
        200..=299 => Err(wire::unreadable("JSON object")),
        404 => Err(ProviderError::NotFound),
        409 => Err(ProviderError::Duplicate),
        _ => Err(wire::rejected(&a, error_message(&a))),
    }
}

/// The body of a mobile-money `POST /charges`: the phone in E.164 form, the network as
/// `mtn`, `vod` or `atl`.
fn mobile_money_body(req: &MobileMoneyCharge<'_>) -> Value {
    json!({
        "reference": req.reference,
        "amount": req.amount,
        "currency": req.currency,
        "email": req.email,
        "channel": "mobile_money",
        "phone": wire::e164_phone(req.msisdn),
        "network": req.network,
        "metadata": req.metadata,
    })
}

/// The gateway protocol as the adapter of provider `.0`; the providers speaking it differ only
/// in their callback signature header, which [`ProviderId::signature_header`] names.
pub struct Gateway(pub ProviderId);

fn transfer_state(b: &Value, fallback: Option<&TransferRequest<'_>>) -> ProviderResult<TransferState> {
    let status = map_status(str_at(b, "status").ok_or_else(|| wire::unreadable("status"))?);
    let amount = amount_at(b, "amount").or(fallback.map(|r| r.amount)).ok_or_else(|| wire::unreadable("amount"))?;
    let currency =
        str_at(b, "currency").or(fallback.map(|r| r.currency)).ok_or_else(|| wire::unreadable("currency"))?.to_string();
    let reference = str_at(b, "reference")
        .or(fallback.map(|r| r.reference))
        .ok_or_else(|| wire::unreadable("reference"))?
        .to_string();
    let reason = match status {
        RemoteStatus::Failed => str_at(b, "failureReason").map(str::to_string),
        _ => None,
    };
    Ok(TransferState { reference, status, amount, currency, reason })
}

/// A gateway refund object as the state of `req`; an amount it omits is the one asked.
fn refund_state(b: &Value, req: &RefundRequest<'_>) -> ProviderResult<RefundState> {
    let status = map_status(str_at(b, "status").ok_or_else(|| wire::unreadable("status"))?);
    let reason = match status {
        RemoteStatus::Failed => str_at(b, "failureReason"),
        _ => str_at(b, "reason").or(req.reason),
    };
    Ok(RefundState {
        refund_id: req.refund_id.to_string(),
        provider_id: str_at(b, "id").map(str::to_string),
        status,
        amount: amount_at(b, "amount").unwrap_or(req.amount),
        reason: reason.map(str::to_string),
    })
}

#[async_trait::async_trait]
impl PaymentProvider for Gateway {
    fn id(&self) -> ProviderId {
        self.0
    }

    fn default_base_url(&self) -> &'static str {
        ""
    }

    /// provider_b (Flutterwave, D18.2) needs a page for mobile money: never a USSD vote's
    /// provider (D18.5).
    fn can_push(&self) -> bool {
        self.0 != ProviderId::B
    }

    async fn initialize(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &ChargeRequest<'_>,
    ) -> ProviderResult<ChargeInit> {
        let body = wire::charge_body(req, "callbackUrl");
        let b = ok_body(wire::call(http, creds, Method::POST, "/charges", Some(&body)).await?)?;
        Ok(ChargeInit {
            authorization_url: str_at(&b, "checkoutUrl").ok_or_else(|| wire::unreadable("checkoutUrl"))?.to_string(),
            access_code: str_at(&b, "accessCode").unwrap_or_default().to_string(),
        })
    }

    /// 201 the pending charge; 409 (a reused reference) is [`ProviderError::Duplicate`].
    async fn charge_mobile_money(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &MobileMoneyCharge<'_>,
    ) -> ProviderResult<()> {
        let body = mobile_money_body(req);
        ok_body(wire::call(http, creds, Method::POST, "/charges", Some(&body)).await?).map(|_| ())
    }

    async fn verify_charge(
        &self,
        http: &Outbound,
        creds: &Credentials,
        reference: &str,
    ) -> ProviderResult<ChargeState> {
        let path = format!("/charges/{}", seg(reference));
        let b = ok_body(wire::call(http, creds, Method::GET, &path, None).await?)?;
        Ok(ChargeState {
            reference: str_at(&b, "reference").ok_or_else(|| wire::unreadable("reference"))?.to_string(),
            status: map_status(str_at(&b, "status").ok_or_else(|| wire::unreadable("status"))?),
            amount: amount_at(&b, "amount").ok_or_else(|| wire::unreadable("amount"))?,
            currency: str_at(&b, "currency").ok_or_else(|| wire::unreadable("currency"))?.to_string(),
            provider_id: None,
            method: None,
            payer: None,
            reason: None,
        })
    }

    async fn create_transfer(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &TransferRequest<'_>,
    ) -> ProviderResult<TransferState> {
        let body = json!({
            "reference": req.reference,
            "amount": req.amount,
            "currency": req.currency,
            "recipient": {
                "name": req.account_name,
                "accountNumber": req.account_number,
                "bankCode": req.bank_code,
                "bankName": req.bank_name,
            },
            "reason": req.reason,
        });
        let b = ok_body(wire::call(http, creds, Method::POST, "/transfers", Some(&body)).await?)?;
        transfer_state(&b, Some(req))
    }

    async fn verify_transfer(
        &self,
        http: &Outbound,
        creds: &Credentials,
        reference: &str,
    ) -> ProviderResult<TransferState> {
        let path = format!("/transfers/{}", seg(reference));
        let b = ok_body(wire::call(http, creds, Method::GET, &path, None).await?)?;
        transfer_state(&b, None)
    }

    /// The refund id is the reference: the gateway answers a repeated POST with the refund it
    /// has. A gateway that refuses it instead (409) is asked for that refund.
    async fn create_refund(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &RefundRequest<'_>,
    ) -> ProviderResult<RefundState> {
        let mut body = json!({
            "reference": req.refund_id,
            "transaction": req.transaction_reference,
            "amount": req.amount,
            "currency": req.currency,
        });
        if let (Some(reason), Some(o)) = (req.reason, body.as_object_mut()) {
            o.insert("reason".into(), reason.into());
        }
        match ok_body(wire::call(http, creds, Method::POST, "/refunds", Some(&body)).await?) {
            Ok(b) => refund_state(&b, req),
            Err(ProviderError::Duplicate) => self.verify_refund(http, creds, req).await,
            Err(e) => Err(e),
        }
    }

    async fn verify_refund(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &RefundRequest<'_>,
    ) -> ProviderResult<RefundState> {
        let path = format!("/refunds/{}", seg(req.refund_id));
        refund_state(&ok_body(wire::call(http, creds, Method::GET, &path, None).await?)?, req)
    }

    /// Hex HMAC-SHA256 of the raw body with the secret key, in constant time.
    fn verify_signature(&self, secret: &[u8], body: &[u8], signature: &str) -> bool {
        wire::verify_hmac::<sha2::Sha256>(secret, body, signature)
    }

    /// Reads the D6 callback body.
    fn parse_callback(&self, body: &[u8]) -> Result<ProviderCallback, String> {
        wire::parse_callback(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mobile_money_charge_names_its_channel_phone_and_network() {
        let metadata = json!({});
        let req = MobileMoneyCharge {
            reference: "T-2",
            amount: 200,
            currency: "GHS",
            email: "233241234567@ussd.invalid",
            msisdn: "233241234567",
            network: "mtn",
            name: None,
            description: None,
            metadata: &metadata,
        };
        assert_eq!(
            mobile_money_body(&req),
            json!({
                "reference": "T-2",
                "amount": 200,
                "currency": "GHS",
                "email": "233241234567@ussd.invalid",
                "channel": "mobile_money",
                "phone": "+233241234567",
                "network": "mtn",
                "metadata": {},
            })
        );
    }

    #[test]
    fn gateway_statuses_map_to_three_outcomes() {
        assert_eq!(map_status("success"), RemoteStatus::Success);
        assert_eq!(map_status("failed"), RemoteStatus::Failed);
        assert_eq!(map_status("pending"), RemoteStatus::Pending);
    }
}
