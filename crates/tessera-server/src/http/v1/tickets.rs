//! Tickets as every route shows them (D16.9): payment reads now; verification, check-in and
//! my-tickets build on the same view.
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::time::rfc3339;
use crate::store::payments::Ticket;

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
}

/// A ticket (D16.9). The QR token is never part of it: only the holder sees that.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TicketOut {
    pub id: String,
    /// Human-typable code (Crockford base32, groups of four).
    pub ticket_code: String,
    /// `valid` or `void`.
    pub status: String,
    pub checked_in: bool,
    pub checked_in_at: Option<String>,
    pub checked_in_by: Option<String>,
    pub ticket_type: IdName,
    pub campaign: IdTitle,
    pub attendee: Attendee,
}

impl From<Ticket> for TicketOut {
    fn from(t: Ticket) -> Self {
        TicketOut {
            id: t.id,
            ticket_code: t.ticket_code,
            status: t.status,
            checked_in: t.checked_in,
            checked_in_at: t.checked_in_at.map(rfc3339),
            checked_in_by: t.checked_in_by,
            ticket_type: IdName { id: t.ticket_type_id, name: t.ticket_type_name },
            campaign: IdTitle { id: t.campaign_id, title: t.campaign_title },
            attendee: Attendee { full_name: t.attendee_name, email: t.attendee_email },
        }
    }
}
