//! Typed views of the response `data` of the routes the SDK knows. Unknown fields are kept
//! out of the way (serde ignores them), so newer servers stay compatible.
use serde::{Deserialize, Serialize};

/// `pagination` beside `data` on list routes (D1.8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pagination {
    pub page: u32,
    pub limit: u32,
    pub total: u64,
    pub has_more: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextAccount {
    pub id: String,
    pub account_slug: String,
    pub platform_name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Branding {
    pub platform_name: String,
    pub primary_domain: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Domain {
    pub hostname: String,
    pub is_primary: bool,
    pub ssl_status: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderSummary {
    pub name: String,
    pub role: String,
    pub configured: bool,
}

/// `GET /context`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    pub account: ContextAccount,
    pub branding: Branding,
    pub domains: Vec<Domain>,
    pub settings: serde_json::Map<String, serde_json::Value>,
    pub provider_summary: Vec<ProviderSummary>,
}
