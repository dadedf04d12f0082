//! Domain types and rules: parsing, state machines, money. No axum, no sqlx.
pub mod accounts;
pub mod campaigns;
pub mod check;
pub mod ledger;
pub mod money;
pub mod participants;
pub mod payments;
pub mod portal;
pub mod qr;
pub mod scopes;
pub mod settings;
pub mod submissions;
pub mod ticket_types;
pub mod time;
pub mod withdrawals;

/// A rule broken by input, with the field it concerns (becomes a 400 details item).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { field: field.into(), message: message.into() }
    }
}

/// What the domain layer can refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    #[error("validation failed")]
    Validation(Vec<FieldError>),
    #[error("{0}")]
    InvalidTransition(String),
    #[error("{0}")]
    Conflict(String),
}

impl DomainError {
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        DomainError::Validation(vec![FieldError::new(field, message)])
    }
}

/// A new resource id: UUID v7 (time-ordered, D1.7).
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Whether a string is a UUID (ids that are not cannot exist: 404 without a store read).
pub fn is_uuid(s: &str) -> bool {
    uuid::Uuid::try_parse(s).is_ok()
}
