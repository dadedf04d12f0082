//! Views: resources as the API returns them, shared by the routes that return them and by the
//! events that report them (D17.26: an event's `data` is the object the API returns for it).
//! Serde and OpenAPI types only: no axum, no SQL; they are built from the store's rows.
//! [`notifications`] is the other face of a resource: a notification's message as its recipient
//! sees it (templates, layout, QR images), rendered without I/O from what its flow read.
pub mod campaigns;
pub mod notifications;
pub mod payments;
pub mod refunds;
pub mod tickets;
pub mod withdrawals;
