//! `provider_a` adapter.
use super::*;

pub struct ProviderA;

#[async_trait::async_trait]
impl PaymentProvider for ProviderA {
    fn id(&self) -> ProviderId {
        ProviderId::A
    }
    async fn initialize(&self, _: &Outbound, _: &Credentials, _: &ChargeRequest<'_>) -> ProviderResult<ChargeInit> {
        Err(ProviderError::Rejected("not built yet".into()))
    }
    async fn verify_charge(&self, _: &Outbound, _: &Credentials, _: &str) -> ProviderResult<ChargeState> {
        Err(ProviderError::Rejected("not built yet".into()))
    }
    async fn create_transfer(
        &self,
        _: &Outbound,
        _: &Credentials,
        _: &TransferRequest<'_>,
    ) -> ProviderResult<TransferState> {
        Err(ProviderError::Rejected("not built yet".into()))
    }
    async fn verify_transfer(&self, _: &Outbound, _: &Credentials, _: &str) -> ProviderResult<TransferState> {
        Err(ProviderError::Rejected("not built yet".into()))
    }
    fn verify_signature(&self, _: &[u8], _: &[u8], _: &str) -> bool {
        false
    }
    fn parse_event(&self, _: &[u8]) -> Result<ProviderEvent, String> {
        Err("not built yet".into())
    }
}
