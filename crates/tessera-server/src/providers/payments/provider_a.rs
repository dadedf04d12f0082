//! `provider_a`: Paystack's API, client side (D11.1). Charges are `transaction/initialize` and
//! `transaction/verify/:reference`, mobile money is `POST /charge` with `mobile_money {phone,
//! provider}` (D17.21; the same verify); payouts are a `transferrecipient` then a `transfer` with
//! Tessera's reference (D16.13: Paystack refuses a reused one); callbacks carry
//! `x-provider_a-signature`, hex HMAC-SHA512 of the raw body with the secret key (D6.1).
//!
//! Refunds (D17.36): Paystack keys a refund by its own id and takes no reference of ours, so
//! Tessera's refund id travels as `merchant_note`. Creating one first looks for it with
//! `GET /refund?transaction=<charge reference>` (a retried call never refunds twice), then
//! `POST /refund {transaction, amount, merchant_note}`; polling finds it the same way and reads
//! `GET /refund/:id` (Paystack's id). Callbacks: `refund.processed`, `refund.failed`.
use reqwest::Method;
use serde_json::{json, Value};

use super::wire::{self, amount_at, seg, str_at, Answer};
use super::*;

pub struct ProviderA;

/// Paystack's statuses in three outcomes: a fresh unpaid charge reports `abandoned`, and
/// `ongoing`, `pending`, `processing`, `queued`, `otp`, `received` are not settled either.
pub fn map_status(s: &str) -> RemoteStatus {
    match s {
        "success" => RemoteStatus::Success,
        "failed" | "reversed" | "rejected" | "blocked" | "declined" => RemoteStatus::Failed,
        _ => RemoteStatus::Pending,
    }
}

/// Mobile-money operators take `type: mobile_money` recipients; other bank codes are GhIPSS.
fn recipient_type(bank_code: &str) -> &'static str {
    match bank_code.to_ascii_uppercase().as_str() {
        "MTN" | "ATL" | "VOD" | "AIRTELTIGO" | "TELECEL" | "VODAFONE" => "mobile_money",
        _ => "ghipss",
    }
}

fn message(a: &Answer) -> Option<&str> {
    str_at(&a.body, "message")
}

/// Paystack answers 2xx with `{status: true, data}`; anything else is an error it explains in
/// `message`. Not found comes as a 404 or a 400 saying so; a reused reference as "Duplicate …".
fn data(a: Answer) -> ProviderResult<Value> {
    payload(a)?.filter(Value::is_object).ok_or_else(|| wire::unreadable("data"))
}

/// A list answer's `data` array.
fn data_list(a: Answer) -> ProviderResult<Vec<Value>> {
    match payload(a)? {
        Some(Value::Array(items)) => Ok(items),
        _ => Err(wire::unreadable("data list")),
    }
}

/// The `data` of a `{status: true}` 2xx (`None` when absent), or the error it stands for.
fn payload(a: Answer) -> ProviderResult<Option<Value>> {
    let ok = a.body.get("status").and_then(Value::as_bool) == Some(true);
    if a.is_success() && ok {
        return Ok(a.body.get("data").cloned());
    }
    let msg = message(&a).unwrap_or_default().to_ascii_lowercase();
    if a.status == 404 || (a.status == 400 && msg.contains("not found")) {
        return Err(ProviderError::NotFound);
    }
    if msg.contains("duplicate") {
        return Err(ProviderError::Duplicate);
    }
    Err(wire::rejected(&a, message(&a)))
}

/// The body of `POST /charge` for a mobile-money charge: Paystack takes the phone in the local
/// form (`0241234567`) and the operator as `mtn`, `vod` or `atl`.
fn mobile_money_body(req: &MobileMoneyCharge<'_>) -> Value {
    json!({
        "email": req.email,
        "amount": req.amount,
        "currency": req.currency,
        "reference": req.reference,
        "mobile_money": {"phone": wire::local_phone(req.msisdn), "provider": req.network},
        "metadata": req.metadata,
    })
}

/// Paystack's refund statuses: `processed` is done and `failed` final; `pending`,
/// `processing` and `needs-attention` are not settled.
pub fn map_refund_status(s: &str) -> RemoteStatus {
    match s {
        "processed" | "success" => RemoteStatus::Success,
        "failed" | "reversed" | "rejected" => RemoteStatus::Failed,
        _ => RemoteStatus::Pending,
    }
}

/// A Paystack refund object as the state of `req`; an amount it omits is the one asked.
fn refund_state(d: &Value, req: &RefundRequest<'_>) -> ProviderResult<RefundState> {
    let status = map_refund_status(str_at(d, "status").ok_or_else(|| wire::unreadable("data.status"))?);
    let provider_id = match d.get("id") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let reason = match status {
        RemoteStatus::Failed => str_at(d, "failure_reason").or_else(|| str_at(d, "gateway_response")),
        _ => str_at(d, "customer_note").or(req.reason),
    };
    Ok(RefundState {
        refund_id: req.refund_id.to_string(),
        provider_id,
        status,
        amount: amount_at(d, "amount").unwrap_or(req.amount),
        reason: reason.map(str::to_string),
    })
}

/// The charge's refund whose `merchant_note` is Tessera's refund id, if Paystack has one.
async fn find_refund(http: &Outbound, creds: &Credentials, req: &RefundRequest<'_>) -> ProviderResult<Option<Value>> {
    let path = format!("/refund?transaction={}", seg(req.transaction_reference));
    let items = data_list(wire::call(http, creds, Method::GET, &path, None).await?)?;
    Ok(items.into_iter().find(|r| str_at(r, "merchant_note") == Some(req.refund_id)))
}

fn transfer_state(d: &Value) -> ProviderResult<TransferState> {
    let status = map_status(str_at(d, "status").ok_or_else(|| wire::unreadable("data.status"))?);
    // `reason` is the narration sent with the transfer; why it failed is in `gateway_response`.
    let reason = match status {
        RemoteStatus::Failed => {
            str_at(d, "failure_reason").or_else(|| str_at(d, "gateway_response")).map(str::to_string)
        }
        _ => None,
    };
    Ok(TransferState {
        reference: str_at(d, "reference").ok_or_else(|| wire::unreadable("data.reference"))?.to_string(),
        status,
        amount: amount_at(d, "amount").ok_or_else(|| wire::unreadable("data.amount"))?,
        currency: str_at(d, "currency").unwrap_or("GHS").to_string(),
        reason,
    })
}

#[async_trait::async_trait]
impl PaymentProvider for ProviderA {
    fn id(&self) -> ProviderId {
        ProviderId::A
    }

    fn default_base_url(&self) -> &'static str {
        "https://api.paystack.co"
    }

    async fn initialize(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &ChargeRequest<'_>,
    ) -> ProviderResult<ChargeInit> {
        let body = wire::charge_body(req, "callback_url");
        let a = wire::call(http, creds, Method::POST, "/transaction/initialize", Some(&body)).await?;
        let d = data(a)?;
        Ok(ChargeInit {
            authorization_url: str_at(&d, "authorization_url")
                .ok_or_else(|| wire::unreadable("data.authorization_url"))?
                .to_string(),
            access_code: str_at(&d, "access_code").unwrap_or_default().to_string(),
        })
    }

    /// Paystack answers `{status: true, data: {status: "pay_offline", display_text}}` while the
    /// prompt waits on the handset; `data.status: failed` means it was refused at once.
    async fn charge_mobile_money(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &MobileMoneyCharge<'_>,
    ) -> ProviderResult<()> {
        let body = mobile_money_body(req);
        let d = data(wire::call(http, creds, Method::POST, "/charge", Some(&body)).await?)?;
        match str_at(&d, "status") {
            Some("failed") => {
                let why = str_at(&d, "gateway_response").or_else(|| str_at(&d, "message")).unwrap_or("failed");
                Err(ProviderError::Rejected(format!("charge failed: {why}")))
            }
            _ => Ok(()),
        }
    }

    async fn verify_charge(
        &self,
        http: &Outbound,
        creds: &Credentials,
        reference: &str,
    ) -> ProviderResult<ChargeState> {
        let path = format!("/transaction/verify/{}", seg(reference));
        let d = data(wire::call(http, creds, Method::GET, &path, None).await?)?;
        Ok(ChargeState {
            reference: str_at(&d, "reference").ok_or_else(|| wire::unreadable("data.reference"))?.to_string(),
            status: map_status(str_at(&d, "status").ok_or_else(|| wire::unreadable("data.status"))?),
            amount: amount_at(&d, "amount").ok_or_else(|| wire::unreadable("data.amount"))?,
            currency: str_at(&d, "currency").ok_or_else(|| wire::unreadable("data.currency"))?.to_string(),
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
        let recipient = json!({
            "type": recipient_type(req.bank_code),
            "name": req.account_name,
            "account_number": req.account_number,
            "bank_code": req.bank_code,
            "currency": req.currency,
        });
        let d = data(wire::call(http, creds, Method::POST, "/transferrecipient", Some(&recipient)).await?)?;
        let code = str_at(&d, "recipient_code").ok_or_else(|| wire::unreadable("data.recipient_code"))?;
        let transfer = json!({
            "source": "balance",
            "amount": req.amount,
            "recipient": code,
            "reference": req.reference,
            "reason": req.reason,
            "currency": req.currency,
        });
        let d = data(wire::call(http, creds, Method::POST, "/transfer", Some(&transfer)).await?)?;
        let mut state = transfer_state(&d).or_else(|_| {
            // The create answer may omit amount or currency; what we sent is what was asked.
            Ok::<_, ProviderError>(TransferState {
                reference: str_at(&d, "reference").unwrap_or(req.reference).to_string(),
                status: map_status(str_at(&d, "status").unwrap_or("pending")),
                amount: req.amount,
                currency: req.currency.to_string(),
                reason: None,
            })
        })?;
        if state.reference.is_empty() {
            state.reference = req.reference.to_string();
        }
        Ok(state)
    }

    async fn verify_transfer(
        &self,
        http: &Outbound,
        creds: &Credentials,
        reference: &str,
    ) -> ProviderResult<TransferState> {
        let path = format!("/transfer/verify/{}", seg(reference));
        transfer_state(&data(wire::call(http, creds, Method::GET, &path, None).await?)?)
    }

    /// Looks for the refund first, so a retried call (after a timeout, a crash) returns the one
    /// made before; a refusal as a duplicate is answered the same way.
    async fn create_refund(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &RefundRequest<'_>,
    ) -> ProviderResult<RefundState> {
        if let Some(existing) = find_refund(http, creds, req).await? {
            return refund_state(&existing, req);
        }
        let mut body = json!({
            "transaction": req.transaction_reference,
            "amount": req.amount,
            "currency": req.currency,
            "merchant_note": req.refund_id,
        });
        if let (Some(reason), Some(o)) = (req.reason, body.as_object_mut()) {
            o.insert("customer_note".into(), reason.into());
        }
        match data(wire::call(http, creds, Method::POST, "/refund", Some(&body)).await?) {
            Ok(d) => refund_state(&d, req),
            Err(ProviderError::Duplicate) => match find_refund(http, creds, req).await? {
                Some(existing) => refund_state(&existing, req),
                None => Err(ProviderError::Duplicate),
            },
            Err(e) => Err(e),
        }
    }

    /// Finds the refund by its `merchant_note`, then reads it by Paystack's id.
    async fn verify_refund(
        &self,
        http: &Outbound,
        creds: &Credentials,
        req: &RefundRequest<'_>,
    ) -> ProviderResult<RefundState> {
        let found = find_refund(http, creds, req).await?.ok_or(ProviderError::NotFound)?;
        let Some(id) = refund_state(&found, req)?.provider_id else { return refund_state(&found, req) };
        let path = format!("/refund/{}", seg(&id));
        refund_state(&data(wire::call(http, creds, Method::GET, &path, None).await?)?, req)
    }

    fn verify_signature(&self, secret: &[u8], body: &[u8], signature: &str) -> bool {
        wire::verify_hmac::<sha2::Sha512>(secret, body, signature)
    }

    fn parse_callback(&self, body: &[u8]) -> Result<ProviderCallback, String> {
        wire::parse_callback(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mobile_money_charge_is_paystacks_charge_body_with_the_local_phone() {
        let metadata = json!({"channel": "ussd"});
        let req = MobileMoneyCharge {
            reference: "T-1",
            amount: 875,
            currency: "GHS",
            email: "233241234567@ussd.invalid",
            msisdn: "233241234567",
            network: "vod",
            name: None,
            description: None,
            metadata: &metadata,
        };
        assert_eq!(
            mobile_money_body(&req),
            json!({
                "email": "233241234567@ussd.invalid",
                "amount": 875,
                "currency": "GHS",
                "reference": "T-1",
                "mobile_money": {"phone": "0241234567", "provider": "vod"},
                "metadata": {"channel": "ussd"},
            })
        );
    }

    #[test]
    fn paystack_refund_statuses_map_to_three_outcomes() {
        assert_eq!(map_refund_status("processed"), RemoteStatus::Success);
        assert_eq!(map_refund_status("failed"), RemoteStatus::Failed);
        for s in ["pending", "processing", "needs-attention"] {
            assert_eq!(map_refund_status(s), RemoteStatus::Pending, "{s}");
        }
    }

    #[test]
    fn paystack_statuses_map_to_three_outcomes() {
        assert_eq!(map_status("success"), RemoteStatus::Success);
        for s in ["failed", "reversed"] {
            assert_eq!(map_status(s), RemoteStatus::Failed, "{s}");
        }
        for s in ["abandoned", "ongoing", "pending", "processing", "queued", "something-new"] {
            assert_eq!(map_status(s), RemoteStatus::Pending, "{s}");
        }
    }
}
