//! Messaging transports (D13.3, D17.7, D18.4): [`email`] over SMTP and [`sms`] over an
//! organization's HTTP gateway or Africa's Talking. They carry a rendered message
//! (`domain::notifications::Rendered`) to where the notification flow
//! (`crate::flows::notifications`) decided, and report a failure as the text `lastError` shows
//! and whether another attempt can help ([`Failure`]); what to send, to whom and when to retry is
//! the flow's.
pub mod email;
pub mod sms;

/// A message that was not sent: the text `lastError` shows, and whether it is final (another
/// attempt would be refused the same way, as Africa's Talking's InvalidPhoneNumber) or worth
/// trying again on the D11.4 schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub error: String,
    pub permanent: bool,
}

impl Failure {
    /// A failure another attempt may get past (a peer down, refusing for now, misconfigured).
    pub fn retry(error: impl Into<String>) -> Failure {
        Failure { error: error.into(), permanent: false }
    }

    /// A failure no attempt will get past: the notification fails at once.
    pub fn permanent(error: impl Into<String>) -> Failure {
        Failure { error: error.into(), permanent: true }
    }
}

impl From<String> for Failure {
    fn from(error: String) -> Failure {
        Failure::retry(error)
    }
}

impl From<&str> for Failure {
    fn from(error: &str) -> Failure {
        Failure::retry(error)
    }
}
