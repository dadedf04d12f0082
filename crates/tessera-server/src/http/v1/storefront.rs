//! `GET /api/white-label/v1/storefront` (Domain-key; campaigns:read and tickets:read): the
//! approved campaigns the key may see, each with its active ticket types and what remains, and
//! each voting campaign with its public nominees (D12.5, D17.17).
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use super::campaigns::CampaignOut;
use super::participants::PublicParticipantOut;
use super::ticket_types::TicketTypeOut;
use crate::domain::campaigns::CampaignType;
use crate::flows::modules::{self, Module};
use crate::http::envelope::{ApiResponse, Envelope};
use crate::http::error::ApiResult;
use crate::http::extract::{scope, DomainKey};
use crate::http::openapi::DomainKeyErrors;
use crate::state::AppState;
use crate::store::campaigns::CampaignQuery;

/// At most this many campaigns, newest first, in one storefront.
pub const MAX_CAMPAIGNS: u32 = 100;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorefrontCampaign {
    #[serde(flatten)]
    pub campaign: CampaignOut,
    pub ticket_types: Vec<TicketTypeOut>,
    /// Voting campaigns only: the active nominees, as the domain-key `GET /participants` shows
    /// them (`votes` only when `metadata.showVoteCounts` is true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub participants: Option<Vec<PublicParticipantOut>>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorefrontOut {
    pub platform_name: String,
    pub domain: String,
    pub campaigns: Vec<StorefrontCampaign>,
}

/// GET /api/white-label/v1/storefront — Domain-key — campaigns:read and tickets:read
#[utoipa::path(
    get, path = "/api/white-label/v1/storefront", operation_id = "storefront_show", tag = "public",
    security(("domainKey" = [])),
    responses(
        (status = 200, description = "Approved campaigns with their active ticket types; voting campaigns also with `participants`, their active nominees (D17.17). While the account's ticketing or voting module is off (D17.44), no ticket types or no participants", body = Envelope<StorefrontOut>),
        DomainKeyErrors,
    )
)]
pub async fn show(State(state): State<AppState>, caller: DomainKey<scope::Storefront>) -> ApiResult<StorefrontOut> {
    let account = state.store.account(&caller.account_id).await?;
    let query = CampaignQuery {
        approved_only: true,
        only_id: caller.campaign_id.clone(),
        page: 1,
        limit: MAX_CAMPAIGNS,
        ..Default::default()
    };
    let (campaigns, _) = state.store.list_campaigns(&caller.account_id, &query).await?;
    // What a module that is off would serve stays out (D17.44): its routes answer 403.
    let voting_on = modules::enabled(&state, &caller.account_id, Module::Voting).await?;
    let ticketing_on = modules::enabled(&state, &caller.account_id, Module::Ticketing).await?;
    let ids: Vec<String> = campaigns.iter().filter(|_| ticketing_on).map(|c| c.id.clone()).collect();
    let mut types = state.store.active_ticket_types_of(&caller.account_id, &ids).await?;
    let voting: Vec<String> = campaigns
        .iter()
        .filter(|c| voting_on && c.campaign_type == CampaignType::Voting)
        .map(|c| c.id.clone())
        .collect();
    let mut nominees = state.store.public_participants_of(&caller.account_id, &voting).await?;
    let campaigns = campaigns
        .into_iter()
        .map(|c| {
            let mine: Vec<TicketTypeOut> = types.extract_if(.., |t| t.campaign_id == c.id).map(Into::into).collect();
            let participants = (voting_on && c.campaign_type == CampaignType::Voting)
                .then(|| nominees.extract_if(.., |p| p.campaign_id == c.id).map(Into::into).collect());
            StorefrontCampaign { campaign: CampaignOut::from(c, false), ticket_types: mine, participants }
        })
        .collect();
    Ok(ApiResponse::ok(StorefrontOut {
        platform_name: account.platform_name,
        domain: caller.domain.clone().unwrap_or_default(),
        campaigns,
    }))
}
