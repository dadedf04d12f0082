//! Messaging transports (D13.3, D17.7): [`email`] over SMTP and [`sms`] over an organization's
//! HTTP gateway. They carry a rendered message (`domain::notifications::Rendered`) to where the
//! notification flow (`crate::flows::notifications`) decided, and report a failure as the text
//! `lastError` shows; what to send, to whom and when to retry is the flow's.
pub mod email;
pub mod sms;
