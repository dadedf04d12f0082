//! A campaign as its routes and `campaign.status.updated` show it (D3.1, D17.41).
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::money;
use crate::domain::time::rfc3339;
use crate::store::campaigns::Campaign;
use crate::views::refunds::RefundCountsOut;

/// The whole campaign record.
#[derive(Serialize, ToSchema)]
pub struct CampaignOut {
    pub id: String,
    pub title: String,
    pub slug: String,
    pub description: String,
    pub campaign_type: String,
    pub status: String,
    pub start_date: String,
    pub end_date: String,
    /// GHS; voting campaigns only.
    #[schema(value_type = Option<f64>, required = false)]
    pub vote_price: Option<Value>,
    pub verification_required: bool,
    /// Only to signed callers.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>, required = false)]
    pub metadata: Option<Value>,
    pub created_at: String,
    pub updated_at: String,
    /// Refunds of the campaign's payments (D17.37): on `GET /campaigns/:campaignId`, once the
    /// campaign was cancelled or one of its payments has a refund.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub refunds: Option<RefundCountsOut>,
}

impl CampaignOut {
    pub fn from(c: Campaign, with_metadata: bool) -> Self {
        CampaignOut {
            id: c.id,
            title: c.title,
            slug: c.slug,
            description: c.description,
            campaign_type: c.campaign_type.as_str().into(),
            status: c.status.as_str().into(),
            start_date: rfc3339(c.start_date),
            end_date: rfc3339(c.end_date),
            vote_price: c.vote_price.map(money::to_ghs),
            verification_required: c.verification_required,
            metadata: with_metadata.then_some(c.metadata),
            created_at: rfc3339(c.created_at),
            updated_at: rfc3339(c.updated_at),
            refunds: None,
        }
    }
}
