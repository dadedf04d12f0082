//! Domain types and rules: parsing, state machines, money. No axum, no sqlx.

/// An enum stored and sent as one of a fixed set of strings: `ALL` (in the listed order),
/// `as_str`, and `parse`, whose refusal names the field with the given message.
macro_rules! str_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($variant:ident = $text:literal),+ $(,)? } else $refusal:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($variant),+
        }

        impl $name {
            pub const ALL: [$name; [$($text),+].len()] = [$($name::$variant),+];
            /// Every value as stored and sent.
            pub const NAMES: [&'static str; [$($text),+].len()] = [$($text),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            pub fn parse(field: &str, s: &str) -> Result<Self, $crate::domain::DomainError> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err($crate::domain::DomainError::field(field, $refusal)),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub mod accounts;
pub mod campaigns;
pub mod check;
pub mod console;
pub mod ledger;
pub mod money;
pub mod notifications;
pub mod participants;
pub mod payments;
pub mod portal;
pub mod qr;
pub mod refunds;
pub mod scopes;
pub mod settings;
pub mod submissions;
pub mod ticket_types;
pub mod tickets;
pub mod time;
pub mod urls;
pub mod ussd;
pub mod webhook_endpoints;
pub mod webhooks;
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
    /// A refusal with its own contract code (`quantity_below_sold`, `participant_not_votable`,
    /// `module_disabled`, D17.14–15): `status` 403 or 409.
    #[error("{message}")]
    Refused { status: u16, code: &'static str, message: String },
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
