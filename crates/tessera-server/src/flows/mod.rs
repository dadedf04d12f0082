//! One home per money or people flow: the business rules handlers and workers call (no axum).
pub mod approvals;
pub mod customer_access;
