//! A ticket as every route and event shows it (D16.9).
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::time::rfc3339;
use crate::store::tickets::Ticket;

#[derive(Debug, Serialize, ToSchema)]
pub struct IdName {
    pub id: String,
    pub name: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct IdTitle {
    pub id: String,
    pub title: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Attendee {
    pub full_name: Option<String>,
    pub email: String,
    /// The attendee's answers to the ticket type's `required_attendee_fields`, by field key
    /// (D17.12); empty when the type asks none.
    pub answers: std::collections::BTreeMap<String, String>,
}

/// A view of a ticket: the view's own leading fields, then what every view shows of the
/// ticket's check-in, type, campaign and holder.
macro_rules! ticket_view {
    ($(#[$meta:meta])* pub struct $name:ident { $($head:tt)* }) => {
        $(#[$meta])*
        #[derive(Debug, Serialize, ToSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            $($head)*
            pub checked_in: bool,
            pub checked_in_at: Option<String>,
            pub checked_in_by: Option<String>,
            pub ticket_type: IdName,
            pub campaign: IdTitle,
            pub attendee: Attendee,
        }
    };
}

ticket_view! {
    /// A ticket (D16.9). The QR token is never part of it: only the holder sees that.
    pub struct TicketOut {
        pub id: String,
        /// Human-typable code (Crockford base32, groups of four).
        pub ticket_code: String,
        /// `valid` or `void`.
        pub status: String,
    }
}

impl From<Ticket> for TicketOut {
    fn from(t: Ticket) -> Self {
        TicketOut {
            id: t.id,
            ticket_code: t.ticket_code,
            status: t.status.as_str().into(),
            checked_in: t.checked_in,
            checked_in_at: t.checked_in_at.map(rfc3339),
            checked_in_by: t.checked_in_by,
            ticket_type: IdName { id: t.ticket_type_id, name: t.ticket_type_name },
            campaign: IdTitle { id: t.campaign_id, title: t.campaign_title },
            attendee: Attendee { full_name: t.attendee_name, email: t.attendee_email, answers: t.attendee_answers },
        }
    }
}

pub(crate) use ticket_view;
